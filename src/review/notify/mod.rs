//! Notifications that reach people (CONTRACT §18): the `pause.created`, `pause.decided`,
//! `pause.expired` and `pause.resolved` events of the sessions' records, signed per Standard
//! Webhooks and POSTed to the access file's webhooks, at least once.
//!
//! The outbox is the sessions' own records
//! ([`Backend::recent_events`](crate::backend::Backend::recent_events)): an event is durable with
//! what causes it, so a sender killed at any point loses nothing. Each event's delivery to each
//! receiver is claimed by one sender at a time
//! ([`Outbox::claim_delivery`](crate::backend::Outbox::claim_delivery)), so two senders never
//! deliver one event to one receiver at once; a 2xx ends it, anything else is tried again with
//! exponential back-off and jitter ([`NotifyOptions::first_retry`], doubling, at most an hour
//! apart) under the same `webhook-id`, until the event is [`NotifyOptions::give_up_after`] old
//! (then given up, and said). Each receiver is served by a loop of its own, each request cut at
//! [`NotifyOptions::timeout`]: a receiver that hangs holds up no other.
//!
//! Layer 7, with the reviewer's domain (feature `notify`).

mod event;
mod notifier;
mod sign;

pub use event::Notification;
pub use notifier::{Attempted, MAX_EVENTS, Notifier, NotifyError, NotifyOptions};
pub use sign::Secret;
