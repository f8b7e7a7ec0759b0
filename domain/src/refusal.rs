//! The domain's refusal codes: every `error` a Bernstein tool may answer besides the engine's
//! own (`protocol::refusal::Common`: `invalid_arguments`, `internal_error`,
//! `host_unavailable`, ...). A refusal changes nothing but the call's audit record, whose
//! `error` is the same code.

bernstein_core::refusal_codes! {
    /// A Bernstein tool's refusal (see the module docs).
    pub enum Refusal {
        /// A name (run, task, artifact key) is empty, too long or not plain text.
        InvalidName = "invalid_name",
        /// No task has that id.
        UnknownTask = "unknown_task",
        /// No run has that id.
        UnknownRun = "unknown_run",
        /// `parent_task_id` names no task.
        UnknownParent = "unknown_parent",
        /// The parent is finished and takes no more subtasks.
        ParentTerminal = "parent_terminal",
        /// The parent is in a status that does not take subtasks.
        ParentNotAcceptingSubtasks = "parent_not_accepting_subtasks",
        /// A different request already created a task with this content-derived id.
        IdCollision = "id_collision",
        /// `depends_on` names a task that does not exist.
        UnknownDependency = "unknown_dependency",
        /// `depends_on` would close a cycle.
        DependencyCycle = "dependency_cycle",
        /// The dependency graph to check is larger than one call may walk.
        DependencyGraphTooLarge = "dependency_graph_too_large",
        /// The task's dependencies are not all done.
        DependenciesNotDone = "dependencies_not_done",
        /// The lifecycle table has no such transition from the task's status.
        IllegalTransition = "illegal_transition",
        /// The task is finished and takes no more messages or artifacts.
        TaskFinished = "task_finished",
        /// The task cannot be cancelled from its status.
        TaskNotCancellable = "task_not_cancellable",
        /// The task cannot be completed from its status.
        TaskNotCompletable = "task_not_completable",
        /// The task is not waiting for an operator's approval.
        TaskNotAwaitingApproval = "task_not_awaiting_approval",
        /// The person asked through the host declined or cancelled the approval form.
        ApprovalDeclined = "approval_declined",
        /// The host's answer to the approval form is not a decision the form offered.
        ApprovalAnswerInvalid = "approval_answer_invalid",
        /// The plan or task changed between the person seeing it and deciding it.
        ApprovalStale = "approval_stale",
        /// A plan's decision came from the caller's arguments: a person decides plans.
        PlanDecidedByPerson = "plan_decided_by_person",
        /// The caller is not the task's current claimer.
        NotClaimer = "not_claimer",
        /// The caller's claim was reclaimed after its lease ran out.
        StaleClaim = "stale_claim",
        /// The task's mailbox holds as many entries as it may.
        MailboxFull = "mailbox_full",
        /// The artifact key holds a version from another task.
        ArtifactKeyTaken = "artifact_key_taken",
        /// The tool signs its answer and the server has no signing key.
        SigningKeyUnavailable = "signing_key_unavailable",
        /// No skill of that name.
        UnknownSkill = "unknown_skill",
        /// The skill has no reference file of that name.
        UnknownReference = "unknown_reference",
        /// The skill has no script of that name.
        UnknownScript = "unknown_script",
        /// No scenario of that name.
        UnknownScenario = "unknown_scenario",
        /// The scenario definition does not parse or breaks its rules.
        InvalidScenario = "invalid_scenario",
        /// A path resolves outside the project (or the folder it must stay in).
        PathEscapes = "path_escapes",
        /// A path is hidden or resolves into `.sdd` (ledger, keys), which no tool reads.
        PrivatePath = "private_path",
        /// `check_file` names a path no artifact record names.
        FileNotRecorded = "file_not_recorded",
        /// The file is longer than the tool reads.
        FileTooLarge = "file_too_large",
        /// The file is not UTF-8 text.
        NotText = "not_text",
        /// Any other IO failure on the host, described in the message.
        IoError = "io_error",
        /// `workdir` is not a usable path (empty, NUL, `..`).
        InvalidWorkdir = "invalid_workdir",
        /// `workdir` does not exist.
        WorkdirNotFound = "workdir_not_found",
        /// `workdir` holds no `.sdd`: it is not a Bernstein project.
        NotAProject = "not_a_project",
        /// An entry on the way to the signal file is a symlink out of the project.
        SymlinkEscape = "symlink_escape",
        /// An entry that must be a directory is not one.
        NotADirectory = "not_a_directory",
        /// The signal file's entry is not a regular file.
        NotAFile = "not_a_file",
    }
}

#[cfg(test)]
mod tests {
    use super::Refusal;
    use bernstein_core::protocol::refusal::Common;

    /// A code belongs to one enum: the domain never restates the engine's codes.
    #[test]
    fn no_code_is_declared_twice() {
        let mut seen = std::collections::BTreeSet::new();
        let all = Refusal::ALL.iter().map(|c| c.as_str());
        for code in all.chain(Common::ALL.iter().map(|c| c.as_str())) {
            assert!(seen.insert(code), "{code} declared twice");
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code}"
            );
        }
    }
}
