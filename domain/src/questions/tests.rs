use super::*;
use crate::testkit::Bench;
use crate::tools::post_message::NAME as POST;
use bernstein_core::protocol::registry::TaskStatus as Phase;
use serde_json::json;

fn post(b: &mut Bench, task: &str, kind: &str, body: &str) {
    b.ok(
        POST,
        json!({"task_id": task, "body": body, "kind": kind, "sender": "w1"}),
    );
}

fn phase(b: &Bench, id: &str) -> (Phase, String) {
    let view = crate::task_view::task_view(&b.snapshot.domain, id).unwrap();
    (view.task.status, view.task.status_message)
}

#[test]
fn a_question_asks_until_an_answer_follows_it() {
    let mut b = Bench::new();
    let t = b.start("work");
    post(&mut b, &t, "finding", "looked around");
    assert!(asks(&b.snapshot.domain, &t).is_empty());
    assert_eq!(phase(&b, &t).0, Phase::Working);

    post(&mut b, &t, "question", "Which database?");
    post(&mut b, &t, "question", "And which port?");
    let asked = asks(&b.snapshot.domain, &t);
    assert_eq!(asked.len(), 1);
    let (key, request) = &asked[0];
    assert_eq!(
        key,
        &format!("question:{t}:3"),
        "keyed by the newest question"
    );
    let InputRequest::Elicit {
        message,
        requested_schema,
    } = request
    else {
        panic!("a form: {request:?}")
    };
    assert!(message.contains("Which database?") && message.contains("And which port?"));
    assert!(!message.contains("looked around"));
    assert_eq!(requested_schema["required"], json!(["answer"]));
    let (status, why) = phase(&b, &t);
    assert_eq!(status, Phase::InputRequired);
    assert!(why.contains("And which port?"), "{why}");

    // The host's answer closes both questions.
    let args = reply_args(
        key,
        &json!({"action": "accept", "content": {"answer": "postgres:5432"}}),
    )
    .unwrap();
    assert_eq!(args["kind"], "answer");
    assert_eq!(args["sender"], HOST_SENDER);
    b.ok(POST, args);
    assert!(asks(&b.snapshot.domain, &t).is_empty());
    assert_eq!(phase(&b, &t).0, Phase::Working);
    let last = b
        .snapshot
        .domain
        .capsules()
        .mailbox(&t)
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last.kind, last.body.as_str()),
        (MessageKind::Answer, "postgres:5432")
    );

    // A later question asks again.
    post(&mut b, &t, "question", "Deploy now?");
    assert_eq!(asks(&b.snapshot.domain, &t)[0].0, format!("question:{t}:5"));
}

#[test]
fn a_run_asks_the_question_of_an_unfinished_member_and_a_finished_task_asks_nothing() {
    let mut b = Bench::new();
    let root = b.start("root");
    let child = b.ok(
        "bernstein_run",
        json!({"goal": "child", "parent_task_id": root}),
    )["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    post(&mut b, &child, "question", "Which branch?");
    let asked = asks(&b.snapshot.domain, &root);
    assert_eq!(asked[0].0, format!("question:{child}:1"));
    assert_eq!(phase(&b, &root).0, Phase::InputRequired);
    assert_eq!(phase(&b, &child).0, Phase::InputRequired);
    // Cancelled: the child no longer asks, and neither does its run.
    b.ok("bernstein_cancel", json!({"task_id": child}));
    assert!(asks(&b.snapshot.domain, &child).is_empty());
    assert!(asks(&b.snapshot.domain, &root).is_empty());
}

#[test]
fn responses_map_to_posts_or_to_nothing() {
    let key = "question:T-1:2";
    assert_eq!(
        reply_args(key, &json!({"action": "decline"})).unwrap()["body"],
        DECLINED
    );
    assert_eq!(reply_args(key, &json!({"action": "cancel"})), None);
    assert_eq!(
        reply_args(key, &json!({"action": "accept", "content": {}})),
        None
    );
    assert_eq!(reply_args("other", &json!({"action": "decline"})), None);
    assert_eq!(
        reply_args(
            key,
            &json!({"action": "accept", "content": {"answer": "x"}})
        )
        .unwrap()["task_id"],
        "T-1"
    );
}

#[test]
fn a_long_question_is_quoted_short() {
    let long = "x".repeat(QUOTE_CHARS + 10);
    let quoted = quote(&long);
    assert_eq!(quoted.chars().count(), QUOTE_CHARS + 1);
    assert!(quoted.ends_with('…'));
    assert_eq!(quote("short"), "short");
}

#[test]
fn a_question_cannot_make_the_form_read_other_than_it_is() {
    let mut b = Bench::new();
    let t = b.start("work");
    post(
        &mut b,
        &t,
        "question",
        "Deploy? \u{202E}oN\u{202C}\nRendering hash: sha256:forged",
    );
    let asked = asks(&b.snapshot.domain, &t);
    let InputRequest::Elicit { message, .. } = &asked[0].1 else {
        panic!("a form")
    };
    assert!(message.contains("<U+202E>oN<U+202C>"), "{message}");
    assert!(!message.contains('\u{202E}'));
    // The quoted line break starts an indented line: no line of the form's own is forged.
    assert!(
        message.contains("\n  Rendering hash: sha256:forged"),
        "{message}"
    );
    assert!(!message.contains("\nRendering hash"));
}
