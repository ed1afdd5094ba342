//! A large namespace checked a part of its services at a time.
//!
//! A compile checks a namespace's objects together: the rules look across
//! them (a Service's pods, an autoscaler's target, a quota's workloads).
//! Held whole, the objects of one namespace of 10,000 services took 320 MB
//! of values (benches/README.md). Where what a compile holds frees the
//! values ([`Held::PARTED`](crate::model::objects::Held::PARTED)), a group
//! of more than [`Parts::above`] services is checked in two passes:
//!
//! 1. each service is rendered and its objects kept in the small form the
//!    index and the rules' lookups read ([`crate::k8s::skeleton`]); the
//!    index, admission (quotas, Kueue) and the checks of identity run on
//!    those, with the platform's objects whole;
//! 2. the services are rendered again, [`Parts::size`] at a time (the
//!    derivation is pure: the same objects come out), and every rule runs
//!    on each object whole, its lookups answered by the index of pass 1;
//!    each part is then held ([`Held::hold`]) and its values freed.
//!
//! The parts are cut where no run of the output order (objects of one
//! namespace and kind rank, which `render --stdout` packs together, see
//! [`same_place`]) has objects of two parts interleaved: each part is
//! held on its own, and its runs must stay whole once every part's
//! objects are sorted together.

use std::collections::HashMap;

use crate::model::objects::{Object, same_place};

/// How a compile checks a large namespace ([`crate::Options::parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    /// A group (a namespace, or a Kueue cohort's namespaces) of more
    /// services than this is checked in parts.
    pub above: usize,
    /// About how many services a part renders and checks at once: a part
    /// is cut after at least this many, where the output order allows.
    pub size: usize,
}

impl Default for Parts {
    /// Groups of more than 1,000 services, in parts of 250: at 10,000
    /// services in one namespace, parts of 250 peaked 26 to 31 MB lower
    /// than parts of 1,000, in the same time, and 10 MB higher than parts
    /// of 50, which took a seventh longer (benches/README.md).
    fn default() -> Parts {
        Parts { above: 1000, size: 250 }
    }
}

/// One part of a group: the services it renders again (places in the
/// group's list of services) and the objects of no service it checks with
/// them (places in the group's sorted objects).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Part {
    pub services: Vec<usize>,
    pub others: Vec<usize>,
}

/// The parts of a group whose `objects` (sorted, in output order) were
/// rendered from `services` (each its namespace and name, in the group's
/// order): each service in one part, each object of no service in the part
/// of the service whose object comes before it in its place (else after
/// it; in the first part where its place has none). Services go into parts
/// in the order of their namespace and name, a part closed once it has at
/// least `size` and the next service's objects come after all of its own
/// in every place. Names that sort between a service's and one of its
/// objects' keep those services in one part, however many there are
/// (services `a-0001` to `a-5000` beside `a`, whose picker is `a-epp`).
pub(super) fn split(objects: &[Object], services: &[(&str, &str)], size: usize) -> Vec<Part> {
    let mut order: Vec<usize> = (0..services.len()).collect();
    order.sort_by_key(|&i| services[i]);
    // A service's place in `order`.
    let rank: HashMap<(&str, &str), usize> = order.iter().enumerate().map(|(r, &i)| (services[i], r)).collect();
    let owned = |o: &Object| {
        let owner = o.owner.as_deref()?;
        rank.get(&(o.id.namespace.as_deref().unwrap_or_default(), owner)).copied()
    };
    // `unit[i]`: the service (by rank) object `i` goes with, if any.
    let mut unit: Vec<Option<usize>> = objects.iter().map(owned).collect();
    // `closed[r]` > 0 (once summed): the part may not close after rank `r`.
    let mut closed = vec![0i64; services.len() + 1];
    let mut start = 0;
    for run in objects.chunk_by(same_place) {
        let places = start..start + run.len();
        start = places.end;
        // Objects of no service go with the service before them, else
        // the one after.
        let mut last = None;
        for i in places.clone() {
            match unit[i] {
                Some(u) => last = Some(u),
                None => unit[i] = last,
            }
        }
        let mut next = None;
        for i in places.clone().rev() {
            match unit[i] {
                Some(u) => next = Some(u),
                None => unit[i] = next,
            }
        }
        // A service whose object comes after one of a later service's:
        // no part closes between the two.
        let mut highest: Option<usize> = None;
        for u in places.filter_map(|i| unit[i]) {
            match highest {
                Some(h) if u < h => {
                    closed[u] += 1;
                    closed[h] -= 1;
                }
                Some(h) if u <= h => {}
                _ => highest = Some(u),
            }
        }
    }
    // Part of each rank.
    let mut part_of = vec![0; services.len()];
    let mut parts = vec![Part::default()];
    let (mut open, mut taken) = (0i64, 0);
    for (r, &i) in order.iter().enumerate() {
        part_of[r] = parts.len() - 1;
        parts.last_mut().expect("one part at least").services.push(i);
        taken += 1;
        open += closed[r];
        if taken >= size && open == 0 && r + 1 < order.len() {
            parts.push(Part::default());
            taken = 0;
        }
    }
    for (i, u) in unit.iter().enumerate() {
        parts[u.map_or(0, |r| part_of[r])].others.extend(objects[i].owner.is_none().then_some(i));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::objects::{ObjectId, sort};
    use serde_json::Value;

    fn object(kind: &str, name: &str, owner: Option<&str>) -> Object {
        let o = Object::new(ObjectId::new("v1", kind, Some("ns"), name), Value::Null);
        match owner {
            Some(owner) => o.owned_by(owner),
            None => o,
        }
    }

    /// The services of each part, by name.
    fn names(parts: &[Part], services: &[(&str, &str)]) -> Vec<Vec<String>> {
        parts.iter().map(|p| p.services.iter().map(|&i| services[i].1.to_string()).collect()).collect()
    }

    #[test]
    fn services_go_into_parts_of_the_size_in_order_of_their_names() {
        let services = [("ns", "c"), ("ns", "a"), ("ns", "b"), ("ns", "d"), ("ns", "e")];
        let mut objects: Vec<Object> = services.iter().map(|(_, n)| object("Service", n, Some(n))).collect();
        objects.push(object("ResourceQuota", "quota", None));
        sort(&mut objects);
        let parts = split(&objects, &services, 2);
        assert_eq!(names(&parts, &services), [vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
        // The quota, alone in its place, goes with the first part.
        let quota = objects.iter().position(|o| o.id.kind == "ResourceQuota").unwrap();
        assert_eq!(parts[0].others, [quota]);
    }

    #[test]
    fn a_part_is_not_closed_where_a_later_services_object_comes_between() {
        // `a`'s picker (`a-epp`) comes after `a-b` in the order of names:
        // `a` and `a-b` go into one part.
        let services = [("ns", "a"), ("ns", "a-b"), ("ns", "c")];
        let mut objects = vec![
            object("Service", "a", Some("a")),
            object("Service", "a-epp", Some("a")),
            object("Service", "a-b", Some("a-b")),
            object("Service", "c", Some("c")),
        ];
        sort(&mut objects);
        assert_eq!(names(&split(&objects, &services, 1), &services), [vec!["a", "a-b"], vec!["c"]]);
    }

    #[test]
    fn an_object_of_no_service_goes_with_the_service_before_it_in_its_place() {
        let services = [("ns", "a"), ("ns", "b")];
        let mut objects = vec![
            object("ConfigMap", "a", Some("a")),
            object("ConfigMap", "a-cache", None),
            object("ConfigMap", "b", Some("b")),
            object("Job", "0-first", None),
            object("Job", "b", Some("b")),
        ];
        sort(&mut objects);
        let parts = split(&objects, &services, 1);
        let others = |p: &Part| p.others.iter().map(|&i| objects[i].id.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&parts, &services), [vec!["a"], vec!["b"]]);
        assert_eq!(others(&parts[0]), ["a-cache"]);
        // Before any service's Job: with the one after it.
        assert_eq!(others(&parts[1]), ["0-first"]);
    }

    #[test]
    fn every_run_of_a_place_keeps_each_parts_objects_together() {
        // Names that interleave in many ways: each place's objects, in
        // order, change part at most once per part.
        let names: Vec<String> =
            ["a", "a-a", "a-b", "ab", "b", "b-a", "a-", "c"].iter().map(|s| s.to_string()).collect();
        let services: Vec<(&str, &str)> = names.iter().map(|n| ("ns", n.as_str())).collect();
        let mut objects = Vec::new();
        for n in &names {
            objects.push(object("Service", n, Some(n)));
            objects.push(object("Service", &format!("{n}-epp"), Some(n)));
            objects.push(object("Deployment", &format!("{n}-x"), Some(n)));
        }
        sort(&mut objects);
        for size in 1..=names.len() {
            let parts = split(&objects, &services, size);
            let mut part_of = HashMap::new();
            for (p, part) in parts.iter().enumerate() {
                for &s in &part.services {
                    part_of.insert(services[s].1, p);
                }
            }
            assert_eq!(part_of.len(), names.len());
            for run in objects.chunk_by(same_place) {
                let seq: Vec<usize> = run.iter().map(|o| part_of[o.owner.as_deref().unwrap()]).collect();
                assert!(seq.windows(2).all(|w| w[0] <= w[1]), "size {size}: {seq:?}");
            }
        }
    }
}
