use super::*;

const KEY: &[u8] = b"session-test-key";
const ISSUED: Timestamp = Timestamp(1_780_000_000_000);

fn session(caps: ClientCaps, revision: Revision) -> Session {
    Session {
        id: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
        caps,
        revision,
        issued: ISSUED,
    }
}

fn all_caps() -> ClientCaps {
    ClientCaps {
        elicitation: true,
        sampling: true,
        roots: true,
    }
}

#[test]
fn a_sealed_session_opens_with_what_it_declared_until_it_expires() {
    let handshake = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ];
    let caps = [
        ClientCaps::NONE,
        all_caps(),
        ClientCaps {
            sampling: true,
            ..ClientCaps::NONE
        },
        ClientCaps {
            elicitation: true,
            roots: true,
            ..ClientCaps::NONE
        },
    ];
    for revision in handshake {
        for caps in caps {
            let s = session(caps, revision);
            let token = issue(KEY, &s, ISSUED).unwrap();
            assert_eq!(open(KEY, token.as_bytes(), ISSUED), Ok(s));
            let last = Timestamp(ISSUED.0 + EXPIRY_MS - 1);
            assert_eq!(open(KEY, token.as_bytes(), last), Ok(s));
            let expired = Timestamp(ISSUED.0 + EXPIRY_MS);
            assert_eq!(open(KEY, token.as_bytes(), expired), Err(Refusal::Expired));
        }
    }
}

#[test]
fn a_token_is_short_visible_ascii() {
    let token = issue(KEY, &session(all_caps(), Revision::V2025_11_25), ISSUED).unwrap();
    assert!(token.len() < MAX_TOKEN_BYTES, "{}", token.len());
    assert!(token.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{token}");
}

#[test]
fn every_flipped_byte_is_refused() {
    let token = issue(KEY, &session(all_caps(), Revision::V2025_11_25), ISSUED).unwrap();
    let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
    for i in 0..bytes.len() {
        for bit in [0x01, 0x80] {
            let mut tampered = bytes.clone();
            tampered[i] ^= bit;
            let t = URL_SAFE_NO_PAD.encode(&tampered);
            assert_eq!(
                open(KEY, t.as_bytes(), ISSUED),
                Err(Refusal::Forged),
                "byte {i} bit {bit:#x}"
            );
        }
    }
    // And every character of the header swapped for another base64url character.
    for i in 0..token.len() {
        let mut t = token.clone().into_bytes();
        t[i] = if t[i] == b'A' { b'B' } else { b'A' };
        assert!(open(KEY, &t, ISSUED).is_err(), "character {i}");
    }
}

#[test]
fn another_servers_key_is_refused() {
    let token = issue(KEY, &session(all_caps(), Revision::V2025_11_25), ISSUED).unwrap();
    assert_eq!(
        open(b"another-server", token.as_bytes(), ISSUED),
        Err(Refusal::Forged)
    );
}

#[test]
fn no_token_from_the_cutoff_on_nor_for_the_stateless_era() {
    let s = session(all_caps(), Revision::V2025_11_25);
    let before = Timestamp(Timestamp::LEGACY_SESSION_CUTOFF.0 - 1);
    assert!(issue(KEY, &s, before).is_some());
    assert_eq!(issue(KEY, &s, Timestamp::LEGACY_SESSION_CUTOFF), None);
    assert_eq!(
        issue(KEY, &session(all_caps(), Revision::MODERN), ISSUED),
        None
    );
}

#[test]
fn malformed_headers_are_refused_unread() {
    let token = issue(KEY, &session(all_caps(), Revision::V2025_11_25), ISSUED).unwrap();
    let open_at = |t: &[u8]| open(KEY, t, ISSUED);
    // Outside visible ASCII: space, tab, DEL, control bytes, UTF-8.
    for bad in [
        format!("{token} ").into_bytes(),
        format!("a\tb{token}").into_bytes(),
        b"abc\x7f".to_vec(),
        b"\x00".to_vec(),
        "s\u{e9}ssion".as_bytes().to_vec(),
        vec![0xff; 10],
    ] {
        assert_eq!(open_at(&bad), Err(Refusal::Characters), "{bad:?}");
    }
    // Oversize, empty, not base64url, the wrong length.
    for bad in [
        vec![b'A'; MAX_TOKEN_BYTES + 1],
        vec![b'A'; 100_000],
        Vec::new(),
        b"s-1".to_vec(),
        b"abc=".to_vec(),
        token.as_bytes()[..token.len() - 1].to_vec(),
        format!("{token}AAAA").into_bytes(),
    ] {
        assert_eq!(open_at(&bad), Err(Refusal::Malformed), "{bad:?}");
    }
}

#[test]
fn unknown_versions_flags_and_revisions_are_refused_even_when_sealed() {
    // What a future format (or a bug) could seal: the tag holds, the fields do not.
    let s = session(all_caps(), Revision::V2025_11_25);
    let good = URL_SAFE_NO_PAD
        .decode(issue(KEY, &s, ISSUED).unwrap())
        .unwrap();
    let reseal = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut sealed = good[..SEALED].to_vec();
        edit(&mut sealed);
        let rendered = tag(KEY, &sealed).tag();
        sealed.extend(hex::decode(rendered.trim_start_matches("hmac-sha256:")).unwrap());
        open(KEY, URL_SAFE_NO_PAD.encode(sealed).as_bytes(), ISSUED)
    };
    assert_eq!(reseal(&|_| {}), Ok(s));
    assert_eq!(reseal(&|b| b[0] = 2), Err(Refusal::Malformed));
    assert_eq!(reseal(&|b| b[1] = 0b1000), Err(Refusal::Malformed));
    assert_eq!(reseal(&|b| b[4] = 27), Err(Refusal::Malformed));
    // 2026-07-28 never has a session.
    assert_eq!(
        reseal(&|b| b[2..5].copy_from_slice(&[26, 7, 28])),
        Err(Refusal::Malformed)
    );
}

#[test]
fn refusals_have_distinct_codes() {
    let all = [
        Refusal::Characters,
        Refusal::Malformed,
        Refusal::Forged,
        Refusal::Expired,
    ];
    let codes: std::collections::BTreeSet<_> = all.iter().map(|r| r.code()).collect();
    assert_eq!(codes.len(), all.len());
}
