import Foundation
import LedgerDomain
import LedgerProviders

/// Each app's own provider rules: every try is built and judged by the ``ProviderSendRules`` of
/// the app its send is for, so one app's conversions never go out under another app's Google link
/// id, developer token, Branch key or Singular SDK key (Google's document binds a `link_id` to one
/// app).
///
/// A send's app is its cause event's metadata `app_id` (recorded on every fact), else the app of
/// the cause's per-app stream id. Apps without rules of their own, and causes that name no app,
/// get ``Table/others``: the rules of the `LEDGER_GOOGLE_*`/`LEDGER_BRANCH_*`/`LEDGER_SINGULAR_*`
/// variables.
///
/// The table is ``Reloadable``: a reload (`SIGHUP`) replaces it while the worker runs, and the next
/// try of every send uses the new credentials.
public struct PerAppSendRules: SendRules {
    /// The rules of every app, and of the others.
    public struct Table: Sendable {
        /// Rules by app id.
        public var apps: [String: ProviderSendRules]
        /// The rules of apps not in ``apps`` (and of causes that name no app).
        public var others: ProviderSendRules

        /// A table.
        public init(apps: [String: ProviderSendRules] = [:], others: ProviderSendRules) {
            self.apps = apps
            self.others = others
        }

        /// The rules of `app` (``others`` when it has none of its own).
        public func rules(forApp app: String?) -> ProviderSendRules {
            app.flatMap { apps[$0] } ?? others
        }
    }

    /// The table every try reads; replace its value to change credentials without a restart.
    public let table: Reloadable<Table>

    /// Rules routed by `table`.
    public init(table: Reloadable<Table>) {
        self.table = table
    }

    /// Rules routed by a fixed table.
    public init(_ table: Table) {
        self.init(table: Reloadable(table))
    }

    /// Every credential value configured for any app (and for the others): what must never be
    /// stored, so that a provider's answer echoing one can be redacted whichever app it came for.
    public var configuredSecrets: [String] {
        let table = table.value
        var secrets: Set<String> = []
        for rules in Array(table.apps.values) + [table.others] {
            secrets.formUnion(rules.configuredSecrets)
        }
        return secrets.filter { !$0.isEmpty }.sorted()
    }

    /// The rules of the app `context`'s send is for.
    public func rules(for context: SendContext) -> ProviderSendRules {
        table.value.rules(forApp: context.decodedCauses.app(of: context.cause))
    }

    /// The send's app's ``ProviderSendRules/preflight(_:)``.
    public func preflight(_ context: SendContext) -> SendDisposition? {
        rules(for: context).preflight(context)
    }

    /// The request built with the send's app's credentials.
    public func buildRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        try rules(for: context).buildRequest(context)
    }

    /// The answer judged by the send's app's rules.
    public func classify(_ answer: SendAnswer, context: SendContext) -> SendDisposition {
        rules(for: context).classify(answer, context: context)
    }

    /// Whether the send's app's rules need the earlier answers.
    public func needsEarlierAnswers(_ answer: SendAnswer, context: SendContext) -> Bool {
        rules(for: context).needsEarlierAnswers(answer, context: context)
    }
}
