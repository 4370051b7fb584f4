//! The property of edit and approve (CONTRACT §22), for any store: random sequences of
//! decisions by three approvers of whom two must approve (seeded: `PLANLOCK_SEED` replays one) —
//! edits valid and refused, approvals of the latest edit and of what it replaced, second
//! approvals, rejections — each answered as the rule says; then a completed cycle must have
//! stored exactly the approved payload (what the step's handler was handed: the memory it
//! wrote), and one not approved nothing.

use planlock::Failure;
use planlock::block_on;
use planlock::review::{decide, edit_of};
use planlock::session::{Recorded, ReviewDecision, ReviewVerdict, SessionRecords};
use serde_json::{Value, json};

const PEOPLE: [&str; 3] = ["ada", "bob", "cy"];

/// The access file's text: ada, bob and cy approve `demo-review`'s pauses, two of them.
pub fn rules() -> String {
    use planlock::review::access::token_sha256;
    let users: String = PEOPLE.iter().map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(u))).collect();
    format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob, cy], required: 2 }}\n")
}

/// What a random sequence of decisions should have done, as the rule says it: the digest
/// approvals are of now, the payload it stands for, who approved it, and how it ended.
pub struct Model {
    digest: Option<planlock::hash::Digest>,
    payload: Option<Value>,
    shown: Value,
    approved: Vec<&'static str>,
    ended: Option<ReviewVerdict>,
}

/// The random cases, and what they covered.
pub struct Property {
    seed: u64,
    rng: fastrand::Rng,
    refused: usize,
    stale: usize,
    completed: usize,
}

impl Property {
    /// Seeded from `PLANLOCK_SEED`, else at random (printed, to replay).
    pub fn seeded() -> Property {
        let seed =
            std::env::var("PLANLOCK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
        println!("edit property: seed {seed} (PLANLOCK_SEED={seed} replays it)");
        Property { seed, rng: fastrand::Rng::with_seed(seed), refused: 0, stale: 0, completed: 0 }
    }

    /// Where a check is, for its message.
    pub fn at(&self, case: usize) -> String {
        format!("seed {} case {case}", self.seed)
    }

    /// Makes a random sequence of decisions on the pause of `records`' session, checking each
    /// answer: what it should have done.
    pub fn decide(&mut self, case: usize, records: &dyn SessionRecords) -> Model {
        let record = block_on(records.load_intervention()).unwrap().expect("paused");
        let shown = record.shown.as_ref().unwrap()["payload"].clone();
        let mut model = Model { digest: record.shown_digest, payload: None, shown, approved: Vec::new(), ended: None };
        let mut old_digests = Vec::new();
        for step in 0..self.rng.usize(1..7) {
            let who = PEOPLE[self.rng.usize(..PEOPLE.len())];
            let at = format!("{} step {step} by {who}", self.at(case));
            let mut decision = ReviewDecision::new(&record, ReviewVerdict::Approve, who, "a reason");
            decision.shown_digest = model.digest;
            match self.rng.usize(..12) {
                // An edit, valid or not.
                0..=3 => {
                    let (payload, valid) = random_payload(&mut self.rng, &model.shown);
                    match block_on(edit_of(records, &record, payload)) {
                        Ok(edit) => {
                            assert!(valid, "{at}: an invalid edit was accepted");
                            let recorded = block_on(decide(records, &decision.editing(edit.clone()))).unwrap();
                            assert!(matches!(recorded, Recorded::Counted { approvals: 1, .. }), "{at}: {recorded:?}");
                            old_digests.extend(model.digest);
                            model.digest = Some(edit.digest);
                            model.payload = Some(edit.payload);
                            model.approved = vec![who];
                        }
                        Err(e) => {
                            assert!(!valid && e.code() == "edit-invalid", "{at}: {e}");
                            self.refused += 1;
                        }
                    }
                }
                // An approval of what an edit replaced: stale, counted nowhere.
                4 | 5 if !old_digests.is_empty() => {
                    decision.shown_digest = Some(old_digests[self.rng.usize(..old_digests.len())]);
                    let e = block_on(decide(records, &decision)).unwrap_err();
                    assert!(["approval-stale", "digest-mismatch"].contains(&e.code()), "{at}: {e}");
                    self.stale += 1;
                }
                // A rejection, now and then.
                6 => {
                    decision.verdict = ReviewVerdict::Reject;
                    assert_eq!(block_on(decide(records, &decision)).unwrap(), Recorded::New, "{at}");
                    model.ended = Some(ReviewVerdict::Reject);
                }
                // An approval of what the pause stands on now.
                _ => match block_on(decide(records, &decision)) {
                    Ok(Recorded::Counted { approvals, .. }) => {
                        model.approved.push(who);
                        assert_eq!(approvals, model.approved.len(), "{at}");
                    }
                    Ok(Recorded::New) => {
                        assert!(!model.approved.contains(&who) && model.approved.len() == 1, "{at}");
                        model.ended = Some(ReviewVerdict::Approve);
                    }
                    Ok(other) => panic!("{at}: {other:?}"),
                    Err(e) => {
                        assert!(e.code() == "already-approved" && model.approved.contains(&who), "{at}: {e}")
                    }
                },
            }
            if model.ended.is_some() {
                break;
            }
        }
        model
    }

    /// Checks what the session's next cycle did after `model`'s decisions: `completed` or not,
    /// and the summaries of the memories it `stored`.
    pub fn check(&mut self, case: usize, model: &Model, completed: bool, stored: &[String]) {
        let at = self.at(case);
        match model.ended {
            Some(ReviewVerdict::Approve) => {
                let ran = model.payload.as_ref().unwrap_or(&model.shown);
                assert!(completed, "{at}: approved, the cycle completes");
                assert_eq!(stored, [ran["summary"].as_str().unwrap()], "{at}: exactly the approved bytes");
                self.completed += 1;
            }
            // Rejected: abandoned; not decided: paused still. Nothing stored either way.
            _ => assert!(!completed && stored.is_empty(), "{at}: not approved, nothing ran"),
        }
    }

    /// Says what the cases covered, and that they covered both a completed cycle and a refused edit.
    pub fn covered(&self) {
        println!(
            "edit property: {} completed, {} edits refused, {} stale approvals refused",
            self.completed, self.refused, self.stale
        );
        assert!(self.completed > 0 && self.refused > 0, "seed {}: the cases cover both", self.seed);
    }
}

/// A random summary: letters, quotes, backslashes, line breaks and characters past ASCII.
fn random_text(rng: &mut fastrand::Rng) -> String {
    const PIECES: [&str; 12] = ["a", "key", " ", "\"", "\\", "\n", "é", "日本", "🔑", "<b>", "{}", "rotation"];
    (0..rng.usize(1..12)).map(|_| PIECES[rng.usize(..PIECES.len())]).collect()
}

/// A random edit of `shown`: valid (a new summary and keywords) or one the validator refuses.
fn random_payload(rng: &mut fastrand::Rng, shown: &Value) -> (Value, bool) {
    let mut payload = shown.clone();
    match rng.usize(..6) {
        0 => payload["keywords"] = json!(random_text(rng)),
        1 => payload["summary"] = json!(rng.u32(..)),
        2 => drop(payload.as_object_mut().unwrap().remove("summary")),
        3 => payload["unexpected"] = json!(true),
        _ => {
            payload["summary"] = json!(random_text(rng));
            payload["keywords"] = json!((0..rng.usize(..4)).map(|_| random_text(rng)).collect::<Vec<_>>());
            return (payload, true);
        }
    }
    (payload, false)
}
