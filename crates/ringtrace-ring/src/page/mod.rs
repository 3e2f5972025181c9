//! A CPU buffer's memory: the byte format's words, the two words that
//! describe each page, zeroed storage and where it comes from. Layout and
//! storage only; no protocol: nothing here decides who may write where.
//!
//! - [`words`]: every page as an array of atomic 32-bit words.
//! - [`meta`]: the slot word and the commit word, bit by bit.
//! - [`hot`]: the writers' hot cache line.
//! - [`counters`]: the counters bumped off the fast path.
//! - [`zeroed`]: arrays that start all zero and cost nothing untouched.
//! - [`memory`]: a CPU buffer's memory, anonymous or in a ring file.
//! - [`zero_pool`]: a file ring's pages zeroed ahead of its claims.
//! - [`forks`]: which process, of a parent and its forked children, made
//!   a pool.

pub(crate) mod counters;
pub(crate) mod forks;
pub(crate) mod hot;
pub(crate) mod memory;
pub(crate) mod meta;
pub(crate) mod words;
pub(crate) mod zero_pool;
pub(crate) mod zeroed;
