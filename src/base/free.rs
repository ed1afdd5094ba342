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
//! desired states too (`compiler`; benches/README.md). The workers drop
//! them as they run out of work, not while the compile waits: a compile
//! then took 0.93x the wall time (0.98x the CPU time), its peak 2 MiB
//! higher.

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
/// it ([`MadeOn`]); an item made elsewhere (on another thread, or a pool
/// of another size) is dropped here, before this returns. The workers'
/// items are dropped after it returns: each worker takes its list once it
/// has no work of its own left (rayon runs a broadcast job when a
/// worker's own queue is empty, before it steals: rayon-core
/// `WorkerThread::take_local_job`). A compile hands a group's values and
/// desired states back where one core waited for the other at the end of
/// each render and hold; freed on the way, the frees fill those waits
/// (benches/README.md). [`freed`] waits for them.
pub fn free_where_made<T: Send + 'static>(items: impl IntoIterator<Item = (MadeOn, T)>) {
    use std::sync::{Arc, Mutex, PoisonError};
    let mut lists: Vec<Vec<T>> = (0..rayon::current_num_threads()).map(|_| Vec::new()).collect();
    let mut elsewhere = Vec::new();
    for (made, item) in items {
        match made.0.map(usize::from).and_then(|i| lists.get_mut(i)) {
            Some(own) => own.push(item),
            None => elsewhere.push(item),
        }
    }
    drop(elsewhere);
    if lists.iter().all(Vec::is_empty) {
        return;
    }
    // A slot for each worker, which it takes its list out of: each lock
    // is taken once, by one thread, never contended.
    let slots: Arc<[Mutex<Vec<T>>]> = lists.into_iter().map(Mutex::new).collect();
    rayon::spawn_broadcast(move |cx| {
        if let Some(slot) = slots.get(cx.index()) {
            drop(std::mem::take(&mut *slot.lock().unwrap_or_else(PoisonError::into_inner)));
        }
    });
}

/// Returns once every worker of rayon's current pool has dropped the
/// items [`free_where_made`] handed it before: each worker runs its
/// broadcast jobs in the order they came (rayon-core keeps a FIFO queue of
/// them for each worker).
pub fn freed() {
    rayon::broadcast(|_| ());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops, and notes the worker each ran on.
    struct Noted {
        dropped: Arc<AtomicUsize>,
        on_maker: Arc<AtomicUsize>,
        made: MadeOn,
    }

    impl Drop for Noted {
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
        let (dropped, on_maker) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        pool.install(|| {
            let items: Vec<(MadeOn, Noted)> = (0..600)
                .into_par_iter()
                .map(|_| {
                    let made = MadeOn::here();
                    let (dropped, on_maker) = (Arc::clone(&dropped), Arc::clone(&on_maker));
                    (MadeOn(made.0), Noted { dropped, on_maker, made })
                })
                .collect();
            assert!(items.iter().all(|(m, _)| m.0.is_some()));
            free_where_made(items);
            freed();
            assert_eq!(dropped.load(Ordering::SeqCst), 600, "every item is dropped");
        });
        assert_eq!(on_maker.load(Ordering::SeqCst), 600);
    }

    #[test]
    fn items_made_off_the_pool_are_dropped_too() {
        let (dropped, on_maker) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        assert!(MadeOn::here().0.is_none(), "a test's own thread is no worker");
        let noted = || Noted { dropped: Arc::clone(&dropped), on_maker: Arc::clone(&on_maker), made: MadeOn::here() };
        free_where_made((0..5).map(|_| (MadeOn::here(), noted())).collect::<Vec<_>>());
        assert_eq!(dropped.load(Ordering::SeqCst), 5, "dropped here, before it returns");
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
