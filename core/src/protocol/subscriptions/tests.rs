use serde_json::json;

use super::*;
use crate::config::Config;
use crate::protocol::registry::{ResourceTemplateSpec, TemplatedRead};
use crate::protocol::unit_fold::{Catalog, ResourceSpec, Server, Snapshot};

fn server() -> Server {
    let catalog = Catalog {
        resources: vec![ResourceSpec {
            uri: "test://static",
            name: "static",
            title: "Static",
            description: "A static resource.",
            mime_type: "text/plain",
            read: |_, s| vec![json!({"uri": "test://static", "text": s.position.seq.to_string()})],
        }],
        resource_templates: vec![ResourceTemplateSpec {
            uri_template: "test://runs/{id}",
            name: "run",
            title: "Run",
            description: "A run.",
            mime_type: "application/json",
            read: |_, uri, vars| match vars["id"].as_str() {
                Some("missing") => Err("no run has this id".into()),
                id => Ok(TemplatedRead {
                    contents: vec![json!({"uri": uri, "text": id})],
                    watch: id.map(|i| format!("run:{i}")),
                    ..TemplatedRead::default()
                }),
            },
            complete: None,
        }],
        ..Catalog::empty()
    };
    Server::with_catalog(Config::new(b"k".to_vec()), catalog)
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn a_subscription_renders_its_resource_with_the_stream_it_watches() {
    let (s, snap) = (server(), Snapshot::default());
    let now = Timestamp(1);
    let rev = Revision::LATEST_HANDSHAKE;
    let Order::Subscribe(w) = subscribe(
        &s,
        rev,
        Some(&json!({"uri": "test://runs/T-1"})),
        &snap,
        now,
    )
    .unwrap() else {
        panic!("a subscribe order");
    };
    assert_eq!(
        (w.uri.as_str(), w.stream.as_deref()),
        ("test://runs/T-1", Some("run:T-1"))
    );
    let other = render(&s, &snap, now, "test://runs/T-2").unwrap();
    assert_ne!(w.digest, other.digest, "the digest is of the contents");
    let fixed = render(&s, &snap, now, "test://static").unwrap();
    assert_eq!(
        fixed.stream, None,
        "a static resource may change with any record"
    );
}

#[test]
fn subscribing_to_nothing_or_with_bad_params_is_refused() {
    let (s, snap) = (server(), Snapshot::default());
    let now = Timestamp(1);
    let old = Revision::LATEST_HANDSHAKE;
    let missing = subscribe(
        &s,
        old,
        Some(&json!({"uri": "test://runs/missing"})),
        &snap,
        now,
    );
    let e = missing.unwrap_err();
    assert_eq!(
        (e.code, e.data.as_ref().unwrap()["uri"].clone()),
        (-32002, json!("test://runs/missing"))
    );
    let unknown = subscribe(&s, old, Some(&json!({"uri": "test://nowhere"})), &snap, now);
    assert_eq!(unknown.unwrap_err().code, -32002);
    for bad in [None, Some(json!({})), Some(json!({"uri": 5}))] {
        assert_eq!(
            subscribe(&s, old, bad.as_ref(), &snap, now)
                .unwrap_err()
                .code,
            -32602
        );
        assert_eq!(unsubscribe(bad.as_ref()).unwrap_err().code, -32602);
    }
    assert_eq!(
        unsubscribe(Some(&json!({"uri": "test://never-held"}))).unwrap(),
        Order::Unsubscribe {
            uri: "test://never-held".into()
        }
    );
}

#[test]
fn listen_acknowledges_only_what_it_honours_tagged_with_its_id() {
    let (s, snap) = (server(), Snapshot::default());
    let params = json!({"_meta": {}, "notifications": {
        "toolsListChanged": true,
        "resourceSubscriptions": ["test://runs/T-1", "test://runs/missing", "test://runs/T-1"],
    }});
    let order = listen(&s, Some(&params), &json!(7), &snap, Timestamp(1)).unwrap();
    let Order::Listen { id, watched, ack } = order else {
        panic!("a listen order")
    };
    assert_eq!(id, "7");
    assert_eq!(
        watched.iter().map(|w| w.uri.as_str()).collect::<Vec<_>>(),
        ["test://runs/T-1"]
    );
    let ack = json_of(&ack);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["test://runs/T-1"]}),
        "list changes are never sent, so they are not acknowledged"
    );
    let bare = listen(
        &s,
        Some(&json!({"notifications": {"toolsListChanged": true}})),
        &json!("a"),
        &snap,
        Timestamp(1),
    )
    .unwrap();
    let Order::Listen { ack: bare, .. } = bare else {
        panic!("a listen order")
    };
    assert_eq!(json_of(&bare)["params"]["notifications"], json!({}));
}

#[test]
fn listen_refuses_a_malformed_filter() {
    let (s, snap) = (server(), Snapshot::default());
    let too_many: Vec<String> = (0..=MAX_URIS_PER_LISTEN)
        .map(|i| format!("test://runs/{i}"))
        .collect();
    for bad in [
        json!({}),
        json!({"notifications": []}),
        json!({"notifications": {"toolsListChanged": "yes"}}),
        json!({"notifications": {"resourceSubscriptions": "test://runs/1"}}),
        json!({"notifications": {"resourceSubscriptions": [1]}}),
        json!({"notifications": {"resourceSubscriptions": too_many}}),
    ] {
        let e = listen(&s, Some(&bad), &json!(1), &snap, Timestamp(1)).unwrap_err();
        assert_eq!(e.code, -32602, "{bad}");
    }
}

#[test]
fn updates_and_the_end_of_a_stream_are_tagged() {
    let plain = json_of(&updated("test://runs/T-1", None));
    assert_eq!(
        plain,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://runs/T-1"}})
    );
    let tagged = json_of(&updated("test://runs/T-1", Some(&json!("s-1"))));
    assert_eq!(tagged["params"]["_meta"][META_SUBSCRIPTION_ID], "s-1");
    let end = json_of(&listen_ended(&json!(3)));
    assert_eq!(
        end,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: 3}}})
    );
}
