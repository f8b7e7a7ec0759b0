//! The request methods this server serves, in some revision: each name written once. The
//! engine routes on [`Method`], never on strings; a name outside this list is `-32601`.

/// A request method this server knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Initialize,
    Ping,
    ServerDiscover,
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourcesRead,
    ResourcesTemplatesList,
    CompletionComplete,
    LoggingSetLevel,
    TasksGet,
    TasksResult,
    TasksList,
    TasksCancel,
    TasksUpdate,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    SubscriptionsListen,
}

impl Method {
    /// Every method, in this order (also the order of the metrics' labels).
    pub const ALL: [Method; 20] = [
        Method::Initialize,
        Method::Ping,
        Method::ServerDiscover,
        Method::ToolsList,
        Method::ToolsCall,
        Method::PromptsList,
        Method::PromptsGet,
        Method::ResourcesList,
        Method::ResourcesRead,
        Method::ResourcesTemplatesList,
        Method::CompletionComplete,
        Method::LoggingSetLevel,
        Method::TasksGet,
        Method::TasksResult,
        Method::TasksList,
        Method::TasksCancel,
        Method::TasksUpdate,
        Method::ResourcesSubscribe,
        Method::ResourcesUnsubscribe,
        Method::SubscriptionsListen,
    ];

    /// The method's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::ServerDiscover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::ResourcesList => "resources/list",
            Method::ResourcesRead => "resources/read",
            Method::ResourcesTemplatesList => "resources/templates/list",
            Method::CompletionComplete => "completion/complete",
            Method::LoggingSetLevel => "logging/setLevel",
            Method::TasksGet => "tasks/get",
            Method::TasksResult => "tasks/result",
            Method::TasksList => "tasks/list",
            Method::TasksCancel => "tasks/cancel",
            Method::TasksUpdate => "tasks/update",
            Method::ResourcesSubscribe => "resources/subscribe",
            Method::ResourcesUnsubscribe => "resources/unsubscribe",
            Method::SubscriptionsListen => "subscriptions/listen",
        }
    }

    /// The method named `name`, if this server knows it.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn every_method_parses_back_from_its_name() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.as_str()), Some(m));
        }
        assert_eq!(Method::parse("tools/CALL"), None);
        assert_eq!(Method::parse("notifications/initialized"), None);
    }
}
