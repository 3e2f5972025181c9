//! The reader's half of the protocol: consuming events and pages, the
//! fixup of pages whose writer vanished, the counts a reader reports, the
//! non-consuming iterator and the merge of every CPU in time order. It
//! works on a buffer's [`SharedState`](crate::shared::SharedState) and its
//! own [`ReaderState`](state::ReaderState), and never sees the writer's
//! code.
//!
//! - [`state`]: the reader's state, behind the reader lock.
//! - [`consume`]: reading by event and by page.
//! - [`in_place`]: reading the open page while it is written.
//! - [`swap`]: the reader-page swap.
//! - [`drain`]: consuming in place, page by page, without owning pages.
//! - [`fixup`]: taking out a page whose commit never comes.
//! - [`count`]: statistics and the loss mark.
//! - [`iter`]: reading without consuming.
//! - [`merge`]: every CPU's events in time order.

pub(crate) mod consume;
pub(crate) mod count;
pub(crate) mod drain;
pub(crate) mod fixup;
pub(crate) mod in_place;
pub(crate) mod iter;
pub(crate) mod merge;
pub(crate) mod state;
pub(crate) mod swap;
