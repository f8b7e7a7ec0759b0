//! Refusal codes: the `error` field of a tool's structured refusal, which is also the
//! `outcome` of the call's audit record. A code is never free text: each owner declares its
//! codes once, as an enum made by [`refusal_codes!`], and [`super::registry::ToolError`]
//! takes only such a value. The engine's own codes, which every catalogue's tools share, are [`Common`]; a catalogue declares
//! the rest (the domain's `domain::refusal::Refusal`), and no code belongs to two enums.

/// A closed set of refusal codes (see the module docs).
pub trait RefusalCode: Copy {
    /// The code as it appears on the wire and in the ledger (`snake_case`).
    fn as_str(self) -> &'static str;
}

/// A code of any enum of codes, for a choice among several owners' codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code(&'static str);

impl Code {
    pub fn of(code: impl RefusalCode) -> Code {
        Code(code.as_str())
    }
}

impl RefusalCode for Code {
    fn as_str(self) -> &'static str {
        self.0
    }
}

/// Declares an enum of refusal codes: each variant with its code, the list of all of them
/// (`ALL`), `as_str` and `from_code` (for a code that crossed a boundary as text, such as a
/// host's refusal reason).
#[macro_export]
macro_rules! refusal_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        #[allow(dead_code)]
        impl $name {
            /// Every code of this enum, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The code as it appears on the wire and in the ledger.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $code,)+
                }
            }

            /// The variant whose code is `code`.
            pub fn from_code(code: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|c| c.as_str() == code)
            }
        }

        impl $crate::protocol::refusal::RefusalCode for $name {
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }
    };
}

refusal_codes! {
    /// The refusals the engine itself makes, and the ones every catalogue's tools share.
    pub enum Common {
        /// The arguments do not match the tool's input schema or its limits.
        InvalidArguments = "invalid_arguments",
        /// No tool of that name is served here (in this tier, or an alias not served).
        UnknownTool = "unknown_tool",
        /// A broken invariant met while serving: a bug, reported, the ledger unchanged.
        InternalError = "internal_error",
        /// The call needs the host (project files), which this context cannot reach.
        HostUnavailable = "host_unavailable",
        /// A tool asked the host for more rounds than one call may take.
        HostRoundsExceeded = "host_rounds_exceeded",
        /// The call would wait, and the server holds as many waiting answers as it allows.
        TooManyWaits = "too_many_waits",
        /// A task-augmented call of a tool that does not support tasks.
        TaskNotSupported = "task_not_supported",
        /// The peer cancelled the call before its answer (an audit outcome: the answer carries
        /// the partial result).
        Cancelled = "cancelled",
        /// A `resources/read` of a URI a template matches but that names nothing (an audit
        /// outcome: the answer is the revision's resource-not-found error).
        ResourceNotFound = "resource_not_found",
        /// Placeholder of a call whose host request is out (never answered to a peer).
        HostRequest = "host_request",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_snake_case_unique_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Common::ALL {
            let s = c.as_str();
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s}"
            );
            assert!(seen.insert(s), "{s} twice");
            assert_eq!(Common::from_code(s), Some(*c));
        }
        assert_eq!(Common::from_code("nope"), None);
    }
}
