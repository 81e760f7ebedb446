//! Places that are taken and given back, each in constant time however many are taken
//! ([`Slab`]): a turn's cancel keeps its listeners in one, a turn's ledger its calls in flight.
//! The free places are chained, the one given back last first, so taking a place never
//! searches the list, and the list is never longer than the most places ever held at once.
//! It owns only the places; it must not know what they hold.

/// A list of places, each taken by a value or free.
#[derive(Debug)]
pub(super) struct Slab<T> {
    /// The places, in segments that never move: the first of [`FIRST`] places, each next one
    /// twice as long. A list that grows allocates a segment, and copies nothing: a turn that
    /// brings 100,000 calls into a wait never moves their places.
    segments: Vec<Vec<SlabPlace<T>>>,
    /// How many places it has, taken or free: the most ever taken at once.
    len: usize,
    /// The place given back last, the next to be taken: the head of the free places' chain.
    free: Option<usize>,
}

/// The places in a slab's first segment.
const FIRST: usize = 4;

#[derive(Debug)]
enum SlabPlace<T> {
    /// Free, with the free place given back before it.
    Free {
        next: Option<usize>,
    },
    Taken(T),
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            segments: Vec::new(),
            len: 0,
            free: None,
        }
    }
}

/// The segment of the place at `at`, and where in it.
fn locate(at: usize) -> (usize, usize) {
    // Segment `k` holds the places from `FIRST * (2^k - 1)` on: shifted by `FIRST`, a place's
    // segment is its highest bit.
    let shifted = at.saturating_add(FIRST);
    let segment = (shifted.ilog2() - FIRST.ilog2()) as usize;
    (segment, shifted - (FIRST << segment))
}

impl<T> Slab<T> {
    /// An empty list with room for its first places, so they allocate nothing.
    pub(super) fn with_room() -> Self {
        let mut slab = Slab::default();
        slab.segments.push(Vec::with_capacity(FIRST));
        slab
    }

    /// A place for `value`: the one given back last, or a new one at the end if none is free.
    pub(super) fn insert(&mut self, value: T) -> usize {
        if let Some(at) = self.free
            && let Some(place) = self.place_mut(at)
            && let SlabPlace::Free { next } = *place
        {
            *place = SlabPlace::Taken(value);
            self.free = next;
            return at;
        }
        let at = self.len;
        let (segment, _) = locate(at);
        if segment == self.segments.len() {
            self.segments.push(Vec::with_capacity(FIRST << segment));
        }
        if let Some(places) = self.segments.get_mut(segment) {
            places.push(SlabPlace::Taken(value));
            self.len += 1;
        }
        at
    }

    /// Give back the place at `at`: its value, if it was taken.
    pub(super) fn remove(&mut self, at: usize) -> Option<T> {
        let free = self.free;
        let place = self.place_mut(at)?;
        if let SlabPlace::Free { .. } = place {
            return None;
        }
        let SlabPlace::Taken(value) = std::mem::replace(place, SlabPlace::Free { next: free })
        else {
            return None;
        };
        self.free = Some(at);
        Some(value)
    }

    /// The value at `at`, if the place is taken.
    pub(super) fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        match self.place_mut(at)? {
            SlabPlace::Taken(value) => Some(value),
            SlabPlace::Free { .. } => None,
        }
    }

    /// The values, in the order of their places.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.segments
            .iter()
            .flatten()
            .filter_map(|place| match place {
                SlabPlace::Taken(value) => Some(value),
                SlabPlace::Free { .. } => None,
            })
    }

    /// The values, in the order of their places.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.segments
            .iter_mut()
            .flatten()
            .filter_map(|place| match place {
                SlabPlace::Taken(value) => Some(value),
                SlabPlace::Free { .. } => None,
            })
    }

    fn place_mut(&mut self, at: usize) -> Option<&mut SlabPlace<T>> {
        let (segment, offset) = locate(at);
        self.segments.get_mut(segment)?.get_mut(offset)
    }

    /// How many places the list has, taken or free: the most ever taken at once.
    #[cfg(test)]
    pub(super) fn places(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::Slab;

    #[test]
    fn a_place_given_back_is_the_next_taken() {
        let mut slab = Slab::default();
        let (a, b, c) = (slab.insert('a'), slab.insert('b'), slab.insert('c'));
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(slab.remove(a), Some('a'));
        assert_eq!(slab.remove(c), Some('c'));
        assert_eq!(slab.remove(c), None, "a free place gives nothing back");
        assert_eq!(slab.insert('d'), c);
        assert_eq!(slab.insert('e'), a);
        assert_eq!(slab.insert('f'), 3);
        assert_eq!(slab.iter().collect::<String>(), "ebdf");
        assert_eq!(slab.get_mut(b), Some(&mut 'b'));
        assert_eq!(slab.remove(7), None);
    }

    #[test]
    fn places_are_found_across_segments() {
        let mut slab = Slab::with_room();
        let at: Vec<usize> = (0..10_000).map(|n| slab.insert(n)).collect();
        assert_eq!(at, (0..10_000).collect::<Vec<_>>());
        assert!(at.iter().all(|&n| slab.get_mut(n).copied() == Some(n)));
        assert_eq!(slab.remove(4), Some(4));
        assert_eq!(slab.remove(9_999), Some(9_999));
        assert_eq!(slab.insert(0), 9_999);
        assert_eq!(slab.insert(0), 4);
        assert_eq!(slab.insert(0), 10_000);
        assert_eq!(slab.places(), 10_001);
        assert_eq!(slab.iter().count(), 10_001);
    }

    #[test]
    fn the_list_is_as_long_as_the_most_places_held_at_once() {
        let mut slab = Slab::default();
        let mut held: Vec<usize> = (0..1_000).map(|n| slab.insert(n)).collect();
        // Give back and take again, in an order that is not the order taken.
        for round in 0..100_000 {
            let at = held.swap_remove((round * 7919) % held.len());
            assert!(slab.remove(at).is_some());
            held.push(slab.insert(round));
        }
        assert_eq!(slab.places(), 1_000);
        assert_eq!(slab.iter().count(), 1_000);
    }
}
