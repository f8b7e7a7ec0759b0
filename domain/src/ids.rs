//! Task and run identities: content-derived, deterministic, and of one fixed shape.
//!
//! A task id is `T-` followed by 16 lowercase hex digits of a digest over the ledger head the
//! task was created at and the task's normalized arguments, so any server instance creating
//! the same task from the same ledger picks the same id. A root task's id is also its run's id.
//!
//! Ids that arrive from a peer are checked here for shape before anything looks them up, so a
//! path-like or oversized value (`../x`, NUL, 10 KB) never reaches a map key or a stream name.
//! This module must never consult the projection.

use bernstein_core::digest::Digest;

/// Prefix of every task id.
pub const TASK_ID_PREFIX: &str = "T-";
/// Number of hex digits after the prefix.
pub const TASK_ID_HEX_LEN: usize = 16;
/// Domain-separation tag of the task id pre-image.
const TASK_ID_TAG: &[u8] = b"bernstein/task-id/v1";

/// Why a peer-supplied id is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("the id is empty")]
    Empty,
    #[error("the id is {0} characters long; ids are {len} characters", len = TASK_ID_PREFIX.len() + TASK_ID_HEX_LEN)]
    WrongLength(usize),
    #[error("the id does not have the shape T-<16 lowercase hex digits>")]
    WrongShape,
}

/// Derives the id of a task created at ledger head `head` from its canonical arguments.
pub fn derive_task_id(head: &Digest, canonical_args: &[u8]) -> String {
    let d = Digest::of_parts(&[TASK_ID_TAG, &head.0, canonical_args]);
    format!("{TASK_ID_PREFIX}{}", &d.hex()[..TASK_ID_HEX_LEN])
}

/// Checks that `s` has the shape of a task (or run) id: `T-` + 16 lowercase hex digits.
pub fn check_task_id(s: &str) -> Result<&str, IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    let want = TASK_ID_PREFIX.len() + TASK_ID_HEX_LEN;
    if s.len() != want {
        return Err(IdError::WrongLength(s.chars().count()));
    }
    let Some(hex_part) = s.strip_prefix(TASK_ID_PREFIX) else {
        return Err(IdError::WrongShape);
    };
    if hex_part
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(s)
    } else {
        Err(IdError::WrongShape)
    }
}

pub use bernstein_core::ledger::run_stream;

/// A short, printable rendering of a peer-supplied value for error messages: at most 40
/// characters, control characters escaped.
pub fn quote_for_message(s: &str) -> String {
    let mut out: String = s.chars().take(40).flat_map(char::escape_debug).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    format!("\"{out}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_have_the_checked_shape_and_depend_on_both_inputs() {
        let a = derive_task_id(&Digest::ZERO, b"{\"goal\":\"x\"}");
        assert!(check_task_id(&a).is_ok(), "{a}");
        assert_eq!(a, derive_task_id(&Digest::ZERO, b"{\"goal\":\"x\"}"));
        assert_ne!(a, derive_task_id(&Digest::of(b"h"), b"{\"goal\":\"x\"}"));
        assert_ne!(a, derive_task_id(&Digest::ZERO, b"{\"goal\":\"y\"}"));
    }

    #[test]
    fn task_id_vector() {
        let id = derive_task_id(&Digest::ZERO, br#"{"goal":"Add a health endpoint"}"#);
        assert_eq!(id, "T-5b44ead4f1b9aa58");
        assert!(include_str!("../../docs/RECORDS.md").contains(&id));
    }

    #[test]
    fn malformed_ids_are_refused() {
        assert_eq!(check_task_id(""), Err(IdError::Empty));
        assert_eq!(check_task_id("../x"), Err(IdError::WrongLength(4)));
        assert_eq!(
            check_task_id("T-0123456789abcdeF"),
            Err(IdError::WrongShape)
        );
        assert_eq!(
            check_task_id("X-0123456789abcdef"),
            Err(IdError::WrongShape)
        );
        assert_eq!(
            check_task_id("T-0123456789abc\0ef"),
            Err(IdError::WrongShape)
        );
        assert_eq!(
            check_task_id("T-../../../etc/pas"),
            Err(IdError::WrongShape)
        );
        assert!(matches!(
            check_task_id(&"T-".repeat(5000)),
            Err(IdError::WrongLength(10000))
        ));
        // Multi-byte characters of the right byte length are not hex.
        assert_eq!(check_task_id("T-éééééééé"), Err(IdError::WrongShape));
        assert!(check_task_id("T-0123456789abcdef").is_ok());
    }

    #[test]
    fn quoting_is_bounded_and_escapes_controls() {
        assert_eq!(quote_for_message("a\0b"), "\"a\\0b\"");
        let long = "x".repeat(100);
        assert_eq!(quote_for_message(&long).chars().count(), 40 + 3);
    }
}
