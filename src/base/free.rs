//! Freeing what a render made on the thread that made it.
//!
//! mimalloc, the allocator of isvc's binaries (but the musl ones), keeps
//! two free lists on each of its pages of blocks: one for frees by the
//! thread that owns the page, and one for frees by any other thread, onto
//! which such a free pushes the block with an atomic compare-and-swap for
//! the owner to collect later (mimalloc's README, "free list
//! multi-sharding"). A compile makes each object's value on the rayon
//! worker that renders its service, and frees it where the object is next
//! taken up, once written or checked: on whichever worker that is, so with
//! two workers about half the blocks went back through the other list.
//! [`free_where_made`] hands each item back to the worker that made it.
//! At 10,000 services in 20 namespaces `render --stdout` took 0.95x the
//! CPU time with the objects' values freed so, and 0.90x with a group's
//! desired states too (`compiler`; benches/README.md).

/// The rayon worker a value was made on, if one made it: where to free it.
/// Any two compare equal, so an object that records it compares by what
/// it holds alone. A clone is made where it is cloned, so a clone of a
/// `MadeOn` is of the worker that clones it (as is a cloned object's
/// value).
#[derive(Debug, Default)]
pub struct MadeOn(Option<u16>);

impl Clone for MadeOn {
    fn clone(&self) -> MadeOn {
        MadeOn::here()
    }
}

impl MadeOn {
    /// The worker of rayon's current pool this runs on, if any.
    pub fn here() -> MadeOn {
        MadeOn(rayon::current_thread_index().and_then(|i| u16::try_from(i).ok()))
    }
}

impl PartialEq for MadeOn {
    fn eq(&self, _: &MadeOn) -> bool {
        true
    }
}

/// Drops every item, each on the worker of rayon's current pool that made
/// it ([`MadeOn`]), all workers at once; an item made elsewhere (on
/// another thread, or a pool of another size) is dropped here. Returns once
/// all are dropped.
pub fn free_where_made<T: Send>(items: impl IntoIterator<Item = (MadeOn, T)>) {
    use std::sync::{Mutex, PoisonError};
    // A list for each worker, which it takes out of its slot: each lock is
    // taken once, by one thread, never contended.
    let mut slots: Vec<Mutex<Vec<T>>> = (0..rayon::current_num_threads()).map(|_| Mutex::default()).collect();
    let mut elsewhere = Vec::new();
    for (made, item) in items {
        match made.0.map(usize::from).and_then(|i| slots.get_mut(i)) {
            Some(own) => own.get_mut().unwrap_or_else(PoisonError::into_inner).push(item),
            None => elsewhere.push(item),
        }
    }
    rayon::broadcast(|cx| {
        if let Some(slot) = slots.get(cx.index()) {
            drop(std::mem::take(&mut *slot.lock().unwrap_or_else(PoisonError::into_inner)));
        }
    });
    drop(elsewhere);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops, and notes the worker each ran on.
    struct Noted<'a> {
        dropped: &'a AtomicUsize,
        on_maker: &'a AtomicUsize,
        made: MadeOn,
    }

    impl Drop for Noted<'_> {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
            if self.made.0.map(usize::from) == rayon::current_thread_index() {
                self.on_maker.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn every_item_is_dropped_on_the_worker_that_made_it() {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let (dropped, on_maker) = (AtomicUsize::new(0), AtomicUsize::new(0));
        pool.install(|| {
            let items: Vec<(MadeOn, Noted<'_>)> = (0..600)
                .into_par_iter()
                .map(|_| {
                    let made = MadeOn::here();
                    (MadeOn(made.0), Noted { dropped: &dropped, on_maker: &on_maker, made })
                })
                .collect();
            assert!(items.iter().all(|(m, _)| m.0.is_some()));
            free_where_made(items);
            assert_eq!(dropped.load(Ordering::SeqCst), 600, "every item is dropped before it returns");
        });
        assert_eq!(on_maker.load(Ordering::SeqCst), 600);
    }

    #[test]
    fn items_made_off_the_pool_are_dropped_too() {
        let (dropped, on_maker) = (AtomicUsize::new(0), AtomicUsize::new(0));
        assert!(MadeOn::here().0.is_none(), "a test's own thread is no worker");
        let noted = || Noted { dropped: &dropped, on_maker: &on_maker, made: MadeOn::here() };
        free_where_made((0..5).map(|_| (MadeOn::here(), noted())).collect::<Vec<_>>());
        assert_eq!(dropped.load(Ordering::SeqCst), 5);
        // A worker index of a larger pool than this one's.
        free_where_made([(MadeOn(Some(u16::MAX)), noted())]);
        assert_eq!(dropped.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn any_two_compare_equal() {
        assert_eq!(MadeOn(Some(1)), MadeOn(None));
    }

    #[test]
    fn a_clone_is_of_the_thread_that_clones_it() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let made = pool.install(MadeOn::here);
        assert!(made.0.is_some(), "made on a worker");
        assert_eq!(made.clone().0, None, "cloned off the pool");
        let (cloned, worker) = pool.install(|| (made.clone().0, rayon::current_thread_index()));
        assert_eq!(cloned.map(usize::from), worker);
    }
}
