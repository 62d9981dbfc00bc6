/// Attribution: what each device fact causes (``SendPlanner``), the
/// versioned decision rule (``LastClickRule``), the process that waits for every provider or a
/// deadline (``AttributionProcessReducer``), the ``AttributionDecider`` that decides once and
/// reports to Google, and ``AttributionExplanation`` for people and auditors.
public enum LedgerDecisions {}
