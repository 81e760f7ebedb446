//! [`StreamRules`]: the rules a [`RetryStream`](super::RetryStream) is given as functions, the
//! one place their types live.

/// The rules a [`RetryStream`](super::RetryStream) was given as functions: which item is
/// content ([`commit_when`](super::RetryStream::commit_when), `C`), which ends the call
/// ([`complete_when`](super::RetryStream::complete_when), `K`), an item's sequence number
/// ([`cursor`](super::RetryStream::cursor), `Sq`) and the restart hook
/// ([`restart_after_commit`](super::RetryStream::restart_after_commit), `H`). Each is a `fn`
/// pointer until a closure is given, so a stream with its default rules is named without this
/// type, as `RetryStream<Retry, Open>` or `RetryStream<Retry, Open, Reopen>`.
///
/// ```
/// use retry_runtime::{Class, Policy, ResumeFrom, Retry, RetryStream, StreamRules, testing};
/// use std::future::Ready;
///
/// type Items = testing::StreamOf<Result<u32, Class>>;
/// type Open = fn(u32) -> Ready<Result<Items, Class>>;
/// type Every = fn(&u32) -> bool;
/// type Number = fn(&u32) -> Option<u64>;
///
/// // A stream whose cursor rule is a named function, as a field.
/// struct Reader {
///     stream: RetryStream<Retry, Open, fn(ResumeFrom) -> Ready<Result<Items, Class>>,
///         StreamRules<Every, Every, Number, fn()>>,
/// }
///
/// fn open(attempt: u32) -> Ready<Result<Items, Class>> {
///     std::future::ready(Ok(testing::stream_of(vec![Ok(attempt), Ok(attempt + 1)])))
/// }
/// fn number(item: &u32) -> Option<u64> {
///     Some(u64::from(*item))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let stream = Retry::new(&Policy::AVAILABILITY).stream(open as Open).cursor(number as Number);
/// let reader = Reader { stream };
/// let items: Vec<u32> = testing::collect(reader.stream).await.into_iter().map(Result::unwrap).collect();
/// assert_eq!(items, [1, 2]);
/// # }
/// ```
pub struct StreamRules<C, K, Sq, H> {
    pub(super) commit: C,
    pub(super) complete: Option<K>,
    pub(super) cursor: Option<Sq>,
    pub(super) restart: H,
}

/// What a [`RetryStream`](super::RetryStream) needs of its rules: that they read its items
/// `T`. Implemented by [`StreamRules`] whose functions take a `&T` (and whose restart hook is
/// an `FnMut()`); sealed, so its methods are the crate's.
///
/// ```
/// use retry_runtime::{ItemRules, StreamRules};
///
/// fn reads<X: ItemRules<u32>>() {}
/// reads::<StreamRules<fn(&u32) -> bool, fn(&u32) -> bool, fn(&u32) -> Option<u64>, fn()>>();
/// ```
pub trait ItemRules<T>: read::ReadItems<T> {}

impl<T, C, K, Sq, H> ItemRules<T> for StreamRules<C, K, Sq, H>
where
    C: Fn(&T) -> bool,
    K: Fn(&T) -> bool,
    Sq: Fn(&T) -> Option<u64>,
    H: FnMut(),
{
}

/// The rules as the stream's polls read them. The trait is public in a private module: no one
/// outside the crate can name, call or implement it, which also seals [`ItemRules`].
pub(super) mod read {
    /// An item's place in the stream, as the cursor rule reads it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Numbered {
        /// The stream has no cursor rule: its event IDs place its items.
        NoRule,
        /// The rule gives this item no number.
        Unnumbered,
        /// The item's sequence number.
        At(u64),
    }

    /// How a stream's polls read its items by its rules.
    pub trait ReadItems<T> {
        /// Whether the stream has a complete rule.
        fn has_complete(&self) -> bool;
        /// Whether `item` is content.
        fn is_content(&self, item: &T) -> bool;
        /// Whether `item` completes the call.
        fn is_complete(&self, item: &T) -> bool;
        /// Where `item` is, by the cursor rule.
        fn number(&self, item: &T) -> Numbered;
        /// Run the restart hook.
        fn restart(&mut self);
    }

    impl<T, C, K, Sq, H> ReadItems<T> for super::StreamRules<C, K, Sq, H>
    where
        C: Fn(&T) -> bool,
        K: Fn(&T) -> bool,
        Sq: Fn(&T) -> Option<u64>,
        H: FnMut(),
    {
        #[inline]
        fn has_complete(&self) -> bool {
            self.complete.is_some()
        }

        #[inline]
        fn is_content(&self, item: &T) -> bool {
            (self.commit)(item)
        }

        #[inline]
        fn is_complete(&self, item: &T) -> bool {
            self.complete
                .as_ref()
                .is_some_and(|complete| complete(item))
        }

        #[inline]
        fn number(&self, item: &T) -> Numbered {
            match &self.cursor {
                None => Numbered::NoRule,
                Some(cursor) => cursor(item).map_or(Numbered::Unnumbered, Numbered::At),
            }
        }

        fn restart(&mut self) {
            (self.restart)();
        }
    }
}

impl<C, K, Sq, H> StreamRules<C, K, Sq, H> {
    /// These rules with other functions; `change` is given the current ones.
    pub(super) fn with<C2, K2, Sq2, H2>(
        self,
        change: impl FnOnce(C, Option<K>, Option<Sq>, H) -> (C2, Option<K2>, Option<Sq2>, H2),
    ) -> StreamRules<C2, K2, Sq2, H2> {
        let (commit, complete, cursor, restart) =
            change(self.commit, self.complete, self.cursor, self.restart);
        StreamRules {
            commit,
            complete,
            cursor,
            restart,
        }
    }
}

impl<C, K, Sq, H> std::fmt::Debug for StreamRules<C, K, Sq, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRules")
            .field("complete", &self.complete.is_some())
            .field("cursor", &self.cursor.is_some())
            .finish_non_exhaustive()
    }
}
