use super::*;

#[test]
fn the_hash_covers_the_content_but_not_the_signature_fields() {
    let signer = Signer::from_seed(&[3; 32]);
    let mut snap = Snapshot::genesis();
    let drafts = super::super::records::new_run_drafts(&super::super::records::TaskCreated {
        task_id: "T-0123456789abcdef".into(),
        run_id: "T-0123456789abcdef".into(),
        parent_id: None,
        title: "t".into(),
        goal: "g".into(),
        role: "backend".into(),
        priority: 2,
        scope: Default::default(),
        complexity: Default::default(),
        estimated_minutes: 30,
        status: TaskStatus::Open,
        created_at: 1,
        depends_on: Vec::new(),
        requires_approval: false,
        plan: false,
        project: None,
        capabilities: Vec::new(),
        redactions: Default::default(),
        redacted_kinds: Vec::new(),
    });
    for r in bernstein_core::ledger::seal(&snap.position, |_| Digest::ZERO, drafts, b"k") {
        snap.apply(&r).unwrap();
    }
    let task = snap.domain.task("T-0123456789abcdef").unwrap().clone();
    let c = build(&snap, &task, "2025-11-25", &signer);
    let mut resigned = c.clone();
    resigned.signature = "x".into();
    resigned.signer_public_key_pem = "y".into();
    assert_eq!(capsule_hash(&resigned), c.capsule_hash);
    let mut edited = c.clone();
    edited.heads.seq += 1;
    assert_ne!(capsule_hash(&edited), c.capsule_hash);
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["type"], CAPSULE_TYPE);
    let (parsed, problems) = check_self(&v, Some(signer.public_key_pem()));
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(parsed.unwrap(), c);
    assert_eq!(c.heads.mailbox, Digest::ZERO.to_string());
}
