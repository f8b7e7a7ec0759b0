use super::*;

fn read(text: &str) -> ClientMessage {
    ClientMessage::read(text.as_bytes(), &Limits::default())
}

#[test]
fn a_request_is_read_once_with_its_ids() {
    let m = read(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#);
    assert!(m.view().refusal().is_none());
    let ids = m.view().ids(0).expect("a slot");
    assert_eq!(
        ids,
        &RequestIds::of_request("tools/call", Some(&serde_json::json!({"name": "x"})))
    );
    assert_eq!(m.request_span_id(), Some(ids.span_id.as_str()));
    assert_eq!(m.request_id().as_deref(), Some("7"));
    assert_eq!(m.cancelled_request(), None);
}

#[test]
fn refusals_follow_dispatch_order() {
    let limits = Limits {
        max_message_bytes: 40,
        max_json_depth: 3,
        ..Limits::default()
    };
    let code = |bytes: &[u8]| {
        ClientMessage::read(bytes, &limits)
            .view()
            .refusal()
            .map(|(_, e)| (e.code, e.message.clone()))
    };
    let (c, m) = code(&[b' '; 41]).unwrap();
    assert_eq!(c, -32600);
    assert!(m.contains("41 bytes"), "{m}");
    let (c, m) = code(b"{\xff}").unwrap();
    assert_eq!(
        (c, m.as_str()),
        (
            -32700,
            "Parse error: the message is not valid UTF-8 (invalid byte at offset 1)"
        )
    );
    assert_eq!(code(b" \n").unwrap().1, "Parse error: the message is empty");
    let (c, m) = code(br#"{"id":1,"a":[[[[1]]]]}"#).unwrap();
    assert_eq!(c, -32600);
    assert!(m.contains("deeper than 3"), "{m}");
    let deep = ClientMessage::read(&br#"{"id":1,"a":[[[[1]]]]}"#[..], &limits);
    assert_eq!(deep.view().refusal().unwrap().0, Some(&Id::Int(1.into())));
    let (c, m) = code(br#"{"a":1,"a":2}"#).unwrap();
    assert_eq!(c, -32700);
    assert!(m.contains("duplicate key \"a\""), "{m}");
}

#[test]
fn a_cancellation_names_the_request_it_cancels() {
    let m =
        read(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q"}}"#);
    assert_eq!(m.cancelled_request().as_deref(), Some("\"q\""));
    assert_eq!(m.request_id(), None);
    assert_eq!(m.request_span_id(), None);
    // Spelled with an escape, the method is not the peek's.
    let escaped =
        read(r#"{"jsonrpc":"2.0","method":"notifications\/cancelled","params":{"requestId":"q"}}"#);
    assert_eq!(escaped.cancelled_request(), None);
}

#[test]
fn big_ids_are_kept_exactly_and_batches_have_ids_per_element() {
    let big = "123456789012345678901234567890";
    let m = read(&format!(
        r#"{{"jsonrpc":"2.0","id":{big},"method":"ping"}}"#
    ));
    assert_eq!(m.view().raw_id(0), Some(big));
    assert_eq!(
        m.request_span_id(),
        None,
        "not a request without its exact id"
    );
    let b = read(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},5]"#);
    assert!(b.view().ids(0).is_some() && b.view().ids(1).is_some() && b.view().ids(2).is_none());
    assert_eq!(
        b.view().batch_ids().map(|i| i.span_id.clone()),
        Some(RequestIds::of_value(b.value().unwrap()).span_id)
    );
}
