//! The deliverer every API replica runs: it lists the subscriptions every
//! poll, takes the lease of each it can, and runs one task per
//! subscription it holds, which posts the key's notifications in order,
//! one message at a time, and saves where it stands after every attempt.
//! A caught-up task waits for the replica's one look at the feed per poll
//! to see it move, rather than reading the feed itself.
//!
//! At least once, in order: a message is saved as pending before it is
//! posted, and the cursor moves past it only once the endpoint acknowledged
//! it (2xx), so a crash at any point posts the same message again, with the
//! same `webhook-id`, and nothing after it first. A replica that lost the
//! lease cannot save (the store refuses it), and stops.
//!
//! It must not write documents or notifications: it only reads the feed.

use std::collections::HashMap;
use std::sync::Arc;

use read_model::Audience;
use read_model::change_feed::{FeedPosition, sequence_of_millisecond};
use read_model::hex::lower_hex;
use read_model::notifications::{NotificationCursor, NotificationQuery, NotificationsRead};
use read_model::webhooks::{WebhookAttempt, WebhookSubscription};
use read_model::{DocumentReads, ModelVersion};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::payload::{ChallengeAnswer, DeliveryGap, NotificationDelivery, WebhookChallenge};
use super::schedule::delay_after;
use super::sending::{Answer, Sender};
use super::settings::DeliverySettings;
use super::signature::sign;
use super::state::{AttemptRecord, DeliveryState, Pause, PendingMessage};
use crate::app::App;
use crate::errors::ApiError;
use crate::keys::notification_filter::NotificationFilter;
use crate::keys::random_bytes;
use crate::routes::notifications::{KeyPage, read_for_key};

/// A subscription as its task sees it: the operator's settings and its key's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bound {
    subscription: WebhookSubscription,
    filter: Option<NotificationFilter>,
    /// Whether its key exists and is not revoked.
    key_active: bool,
}

/// What a task shares.
struct Context {
    app: Arc<App>,
    settings: DeliverySettings,
    sender: Sender,
    /// This replica's name on the leases it holds.
    owner: String,
    /// Moves whenever the production feed does (see [`FeedWatch`]).
    feed: watch::Receiver<u64>,
}

/// Delivers the subscriptions this replica can hold until `stop` resolves,
/// then gives their leases up.
pub async fn run(app: Arc<App>, settings: DeliverySettings, stop: impl Future<Output = ()>) {
    let owner = match random_bytes::<8>() {
        Ok(bytes) => format!("replica-{}", lower_hex(&bytes)),
        Err(error) => {
            tracing::error!(%error, "cannot name this replica; webhooks are not delivered from it");
            return;
        }
    };
    let (moved, feed) = watch::channel(0);
    let mut watch = FeedWatch { moved, last: None };
    let context = Arc::new(Context { sender: Sender::new(&settings.sender), app, settings, owner, feed });
    let (stopping, stopped) = watch::channel(false);
    let mut held: HashMap<String, watch::Sender<Option<Bound>>> = HashMap::new();
    let mut tasks = JoinSet::new();
    tokio::pin!(stop);
    loop {
        if let Err(error) = watch.look(&context).await {
            tracing::warn!(%error, "cannot read the notification feed; trying again");
        }
        if let Err(error) = scan(&context, &mut held, &mut tasks, &stopped).await {
            tracing::warn!(%error, "cannot list webhook subscriptions; trying again");
        }
        while tasks.try_join_next().is_some() {}
        held.retain(|_, bound| !bound.is_closed());
        tokio::select! {
            () = &mut stop => break,
            () = tokio::time::sleep(context.settings.poll) => {}
        }
    }
    let _ = stopping.send(true);
    while tasks.join_next().await.is_some() {}
}

/// One read of the production feed per poll for the whole replica, which
/// wakes the caught-up subscriptions when it moves: a thousand caught-up
/// subscriptions cost one read a second, not a thousand.
struct FeedWatch {
    moved: watch::Sender<u64>,
    /// Where the last look ended; `None` before the first.
    last: Option<(ModelVersion, FeedPosition)>,
}

impl FeedWatch {
    /// Reads after where the last look ended, and signals when anything
    /// was there, or the feed was replaced or pruned past it.
    async fn look(&mut self, context: &Context) -> Result<(), read_model::StoreError> {
        let reads = context.app.store.as_ref();
        let Some(after) = self.last.clone() else {
            // The first look starts now: what is there already, each task reads by itself.
            self.last = position_before(reads, context.app.clock.unix_ms()).await?;
            return Ok(());
        };
        let query = NotificationQuery { audience: Audience::Production, after: Some(after), limit: LOOK_LIMIT };
        let (moved, last) = match reads.notifications(&query).await? {
            NotificationsRead::Page(page) => (!page.items.is_empty(), (page.model_version, page.next)),
            NotificationsRead::Gone { model_version, resume_from, .. } => (true, (model_version, resume_from)),
        };
        self.last = Some(last);
        if moved {
            self.moved.send_modify(|count| *count = count.wrapping_add(1));
        }
        Ok(())
    }
}

/// The position of the production feed just before `unix_ms`, in the
/// active model version. A position is a sequence, or a sequence and an
/// id, so one below the millisecond's first sequence is before all of it
/// on either backend.
async fn position_before(
    reads: &dyn DocumentReads,
    unix_ms: i64,
) -> Result<Option<(ModelVersion, FeedPosition)>, read_model::StoreError> {
    let query = NotificationQuery { audience: Audience::Production, after: None, limit: 1 };
    let NotificationsRead::Page(page) = reads.notifications(&query).await? else { return Ok(None) };
    let position = FeedPosition { sequence: sequence_of_millisecond(unix_ms) - 1, lcc_id: String::new() };
    Ok(Some((page.model_version, position)))
}

/// The most notifications one look of the [`FeedWatch`] reads past.
const LOOK_LIMIT: u32 = 1_000;

/// Lists the subscriptions: hands each held one its current settings, and
/// takes the lease of each free one.
async fn scan(
    context: &Arc<Context>,
    held: &mut HashMap<String, watch::Sender<Option<Bound>>>,
    tasks: &mut JoinSet<()>,
    stopped: &watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let records = context.app.webhooks.webhooks().await?;
    let keys = context.app.production_keys.list().await?;
    let listed: Vec<String> = records.iter().map(|record| record.subscription.id.clone()).collect();
    for record in records {
        let key = keys.iter().find(|key| key.key_id == record.subscription.key_id);
        let bound = Bound {
            filter: key.and_then(|key| key.notification_filter.clone()),
            key_active: key.is_some_and(|key| !key.revoked),
            subscription: record.subscription,
        };
        let id = bound.subscription.id.clone();
        if let Some(current) = held.get(&id) {
            current.send_if_modified(|current| {
                let changed = current.as_ref() != Some(&bound);
                *current = Some(bound);
                changed
            });
            continue;
        }
        if !bound.subscription.enabled || !bound.key_active {
            continue;
        }
        let now = context.app.clock.unix_ms();
        if !context.app.webhooks.claim_webhook(&id, &context.owner, now, now + lease_ms(context)).await? {
            continue;
        }
        tracing::info!(webhook = id, owner = context.owner, "delivering this webhook from this replica");
        let (settings, receiver) = watch::channel(Some(bound));
        held.insert(id.clone(), settings);
        tasks.spawn(deliver(Arc::clone(context), id, receiver, stopped.clone()));
    }
    for (id, bound) in held.iter() {
        if !listed.contains(id) {
            bound.send_replace(None);
        }
    }
    Ok(())
}

fn lease_ms(context: &Context) -> i64 {
    i64::try_from(context.settings.lease.as_millis()).unwrap_or(i64::MAX)
}

/// What a step of a task leads to.
enum Step {
    /// Nothing to do now: look again after the poll interval.
    Wait,
    /// Every notification is delivered: look again when the feed moves.
    CaughtUp,
    /// Go on at once.
    Again,
    /// Another replica holds the subscription now.
    Lost,
}

/// One subscription's task, while this replica holds its lease.
async fn deliver(
    context: Arc<Context>,
    id: String,
    mut bound: watch::Receiver<Option<Bound>>,
    mut stopped: watch::Receiver<bool>,
) {
    let webhooks = &context.app.webhooks;
    let mut state = match webhooks.webhook(&id).await {
        Ok(Some(record)) => DeliveryState::parse(&id, &record.state),
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(webhook = id, %error, "cannot read the delivery state; leaving the webhook to a later scan");
            let _ = webhooks.release_webhook(&id, &context.owner).await;
            return;
        }
    };
    let mut feed = context.feed.clone();
    let mut renewed_at = context.app.clock.unix_ms();
    loop {
        if *stopped.borrow() {
            break;
        }
        let Some(current) = bound.borrow().clone() else { break };
        let now = context.app.clock.unix_ms();
        if now - renewed_at >= lease_ms(&context) / 3 {
            match webhooks.claim_webhook(&id, &context.owner, now, now + lease_ms(&context)).await {
                Ok(true) => renewed_at = now,
                Ok(false) => return,
                Err(error) => tracing::warn!(webhook = id, %error, "cannot renew the lease"),
            }
        }
        // Seen before reading: a move while the step reads wakes the wait after it.
        feed.borrow_and_update();
        let step = match step(&context, &current, &mut state).await {
            Ok(step) => step,
            Err(error) => {
                tracing::warn!(webhook = id, %error, "a delivery step failed; trying again");
                // What was changed in memory may not have been saved: go on from what was.
                if let Ok(Some(record)) = webhooks.webhook(&id).await {
                    state = DeliveryState::parse(&id, &record.state);
                }
                Step::Wait
            }
        };
        match step {
            Step::Lost => return,
            Step::Again => continue,
            Step::Wait => {
                tokio::select! {
                    _ = stopped.changed() => {}
                    _ = bound.changed() => {}
                    () = tokio::time::sleep(context.settings.poll) => {}
                }
            }
            Step::CaughtUp => {
                // At least every third of the lease, to renew it.
                tokio::select! {
                    _ = stopped.changed() => {}
                    _ = bound.changed() => {}
                    _ = feed.changed() => {}
                    () = tokio::time::sleep(context.settings.lease / 3) => {}
                }
            }
        }
    }
    if let Err(error) = webhooks.release_webhook(&id, &context.owner).await {
        tracing::warn!(webhook = id, %error, "cannot release the lease; it expires by itself");
    }
}

/// Saves the state; [`Step::Lost`] when this replica no longer holds the lease.
async fn save(context: &Context, id: &str, state: &DeliveryState) -> anyhow::Result<Option<Step>> {
    let saved = context.app.webhooks.save_webhook_state(id, &context.owner, &state.to_json()).await?;
    Ok(if saved { None } else { Some(Step::Lost) })
}

/// Does the next thing the subscription needs.
async fn step(context: &Context, bound: &Bound, state: &mut DeliveryState) -> anyhow::Result<Step> {
    let subscription = &bound.subscription;
    let id = subscription.id.as_str();
    if !subscription.enabled || !bound.key_active {
        return Ok(Step::Wait);
    }
    let now = context.app.clock.unix_ms();
    if let Some(pause) = &state.paused {
        if subscription.resumed_at_ms <= pause.at_ms {
            return Ok(Step::Wait);
        }
        tracing::info!(webhook = id, "the operator resumed the webhook");
        state.paused = None;
        state.failures = 0;
        state.next_attempt_at_ms = 0;
        return Ok(save(context, id, state).await?.unwrap_or(Step::Again));
    }
    if now < state.next_attempt_at_ms {
        return Ok(Step::Wait);
    }
    if !state.verified {
        return challenge(context, subscription, state).await;
    }
    let Some(cursor) = state.cursor.clone() else {
        // Just before the millisecond the subscription was added: it is sent
        // what changed since, not the feed's whole retained history.
        let Some((model_version, position)) =
            position_before(context.app.store.as_ref(), subscription.created_at_ms).await?
        else {
            return Ok(Step::Wait);
        };
        let start = NotificationCursor { model_version, audience: Audience::Production, position };
        state.cursor = Some(start.encode());
        return Ok(save(context, id, state).await?.unwrap_or(Step::Again));
    };
    let (message, pending) = match state.pending.clone() {
        Some(pending) => match message_of(context, bound, &cursor, &pending).await? {
            Some(message) => (message, pending),
            None => {
                // Its notifications can no longer be read as they were: a gap message replaces it.
                state.pending = None;
                return Ok(save(context, id, state).await?.unwrap_or(Step::Again));
            }
        },
        None => match next_message(context, bound, &cursor, state).await? {
            Ok((message, pending)) => {
                state.pending = Some(pending.clone());
                if let Some(lost) = save(context, id, state).await? {
                    return Ok(lost);
                }
                (message, pending)
            }
            Err(step) => return Ok(step),
        },
    };
    let body = serde_json::to_vec(&message)?;
    let answer = post(context, &subscription.endpoint, &pending.message_id, body, false).await?;
    let succeeded = answer.acknowledged();
    record(context, id, "notifications", &pending.message_id, state.failures + 1, message.notifications.len(), &answer)
        .await;
    if succeeded {
        state.cursor = Some(pending.next.clone());
        state.delivered += message.notifications.len() as u64;
        state.pending = None;
        state.failures = 0;
        state.next_attempt_at_ms = 0;
        state.last_success_at_ms = Some(context.app.clock.unix_ms());
        return Ok(save(context, id, state).await?.unwrap_or(Step::Again));
    }
    failed(context, id, state, &answer).await
}

/// The challenge: the endpoint must echo a random value.
async fn challenge(
    context: &Context,
    subscription: &WebhookSubscription,
    state: &mut DeliveryState,
) -> anyhow::Result<Step> {
    let value = lower_hex(&random_bytes::<16>()?);
    let message = WebhookChallenge {
        kind: "webhook.challenge".into(),
        subscription: subscription.id.clone(),
        challenge: value.clone(),
    };
    let message_id = format!("msg_challenge_{value}");
    let answer = post(context, &subscription.endpoint, &message_id, serde_json::to_vec(&message)?, true).await?;
    let mut answer = answer;
    let echoed = serde_json::from_slice::<ChallengeAnswer>(&answer.body).is_ok_and(|echo| echo.challenge == value);
    let succeeded = answer.acknowledged() && echoed;
    if answer.acknowledged() && !echoed {
        answer.error = Some("the answer did not echo the challenge".into());
    }
    record(context, &subscription.id, "challenge", &message_id, state.failures + 1, 0, &answer).await;
    if succeeded {
        state.verified = true;
        state.failures = 0;
        state.next_attempt_at_ms = 0;
        return Ok(save(context, &subscription.id, state).await?.unwrap_or(Step::Again));
    }
    failed(context, &subscription.id, state, &answer).await
}

/// Schedules the next attempt after a failure, or pauses the subscription:
/// at once on `410 Gone`, or when the retry schedule is spent.
async fn failed(context: &Context, id: &str, state: &mut DeliveryState, answer: &Answer) -> anyhow::Result<Step> {
    let what = match (answer.status, &answer.error) {
        (_, Some(error)) => error.clone(),
        (Some(status), None) => format!("the endpoint answered {status}"),
        (None, None) => "no answer".to_owned(),
    };
    let now = context.app.clock.unix_ms();
    state.failures += 1;
    state.last_error = Some(what.clone());
    let pause = if answer.status == Some(410) {
        Some("the endpoint answered 410 Gone".to_owned())
    } else if let Some(delay) = delay_after(state.failures) {
        state.next_attempt_at_ms = now + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
        None
    } else {
        Some(format!("no attempt succeeded over the retry schedule; the last: {what}"))
    };
    if let Some(reason) = pause {
        tracing::warn!(webhook = id, reason, "pausing the webhook until the operator resumes it");
        state.paused = Some(Pause { at_ms: now, reason });
    }
    Ok(save(context, id, state).await?.unwrap_or(Step::Wait))
}

/// Up to `limit` notifications the subscription's key admits after `cursor`.
async fn read_after(
    context: &Context,
    bound: &Bound,
    cursor: &str,
    limit: u32,
) -> anyhow::Result<Result<KeyPage, ApiError>> {
    let after =
        NotificationCursor::decode(cursor).map_err(|_| anyhow::anyhow!("the stored cursor {cursor} is not one"))?;
    let position = Some((after.model_version, after.position));
    let filter = bound.filter.as_ref();
    Ok(read_for_key(context.app.store.as_ref(), Audience::Production, filter, position, limit).await)
}

/// The message after `cursor`: its next notifications, a gap, or nothing yet.
async fn next_message(
    context: &Context,
    bound: &Bound,
    cursor: &str,
    state: &mut DeliveryState,
) -> anyhow::Result<Result<(NotificationDelivery, PendingMessage), Step>> {
    let id = bound.subscription.id.as_str();
    let page = match read_after(context, bound, cursor, context.settings.batch).await? {
        Ok(page) => page,
        Err(ApiError::NotificationsGone { reason, resume_from }) => {
            let gap = DeliveryGap { reason };
            let pending = PendingMessage {
                message_id: message_id(id, cursor, &resume_from),
                count: 0,
                next: resume_from,
                gap: Some(gap),
            };
            return Ok(Ok((delivery(id, cursor, Vec::new(), &pending), pending)));
        }
        Err(error) => return Err(anyhow::anyhow!("cannot read the notifications: {error}")),
    };
    let Some(last) = page.items.last() else {
        // None the key admits: move past what was read, so it is not read again.
        let reached = NotificationCursor {
            model_version: page.model_version,
            audience: Audience::Production,
            position: page.next,
        }
        .encode();
        if reached != cursor {
            state.cursor = Some(reached);
            if let Some(lost) = save(context, id, state).await? {
                return Ok(Err(lost));
            }
        }
        return Ok(Err(if page.exhausted { Step::CaughtUp } else { Step::Again }));
    };
    let next = last.cursor.clone();
    let count = u32::try_from(page.items.len()).unwrap_or(u32::MAX);
    let pending = PendingMessage { message_id: message_id(id, cursor, &next), count, next, gap: None };
    Ok(Ok((delivery(id, cursor, page.items, &pending), pending)))
}

/// The pending message again, as it was first posted; `None` when its
/// notifications can no longer be read as they were.
async fn message_of(
    context: &Context,
    bound: &Bound,
    cursor: &str,
    pending: &PendingMessage,
) -> anyhow::Result<Option<NotificationDelivery>> {
    let id = bound.subscription.id.as_str();
    if pending.gap.is_some() {
        return Ok(Some(delivery(id, cursor, Vec::new(), pending)));
    }
    match read_after(context, bound, cursor, pending.count).await? {
        Ok(page) if page.items.last().is_some_and(|last| last.cursor == pending.next) => {
            Ok(Some(delivery(id, cursor, page.items, pending)))
        }
        Ok(_) | Err(ApiError::NotificationsGone { .. }) => Ok(None),
        Err(error) => Err(anyhow::anyhow!("cannot read the notifications: {error}")),
    }
}

fn delivery(
    id: &str,
    cursor: &str,
    notifications: Vec<crate::routes::notifications::NotificationItem>,
    pending: &PendingMessage,
) -> NotificationDelivery {
    NotificationDelivery {
        kind: "notifications".into(),
        subscription: id.to_owned(),
        previous: Some(cursor.to_owned()),
        notifications,
        next: pending.next.clone(),
        gap: pending.gap.clone(),
    }
}

/// A message's `webhook-id`: the same for the same subscription and span.
fn message_id(id: &str, previous: &str, next: &str) -> String {
    let digest = twox_hash::XxHash3_128::oneshot(format!("{id}\n{previous}\n{next}").as_bytes());
    format!("msg_{digest:032x}")
}

/// Signs and posts one attempt, on the blocking pool.
async fn post(
    context: &Context,
    endpoint: &str,
    message_id: &str,
    body: Vec<u8>,
    read_body: bool,
) -> anyhow::Result<Answer> {
    let timestamp = context.app.clock.unix_ms().div_euclid(1_000);
    let headers = sign(&context.app.signer, message_id, timestamp, &body)?;
    let sender = context.sender.clone();
    let endpoint = endpoint.to_owned();
    Ok(tokio::task::spawn_blocking(move || sender.post(&endpoint, &headers, body, read_body)).await?)
}

/// Records an attempt, in the store and the metrics; a failure to record
/// is logged, and delivery goes on.
async fn record(
    context: &Context,
    id: &str,
    kind: &str,
    message_id: &str,
    attempt: u32,
    notifications: usize,
    answer: &Answer,
) {
    context.app.metrics.record_webhook_attempt(kind, answer.acknowledged(), notifications);
    let record = AttemptRecord {
        kind: kind.to_owned(),
        message_id: message_id.to_owned(),
        attempt,
        notifications: u32::try_from(notifications).unwrap_or(u32::MAX),
        status: answer.status,
        error: answer.error.clone(),
        duration_ms: u64::try_from(answer.duration.as_millis()).unwrap_or(u64::MAX),
    };
    let attempt = WebhookAttempt {
        at_ms: context.app.clock.unix_ms(),
        record: serde_json::to_string(&record).unwrap_or_default(),
    };
    if let Err(error) = context.app.webhooks.record_webhook_attempt(id, &attempt).await {
        tracing::warn!(webhook = id, %error, "cannot record a delivery attempt");
    }
}
