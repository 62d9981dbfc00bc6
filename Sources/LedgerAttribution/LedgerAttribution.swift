/// Attribution: what device facts cause, the decision rule, the decider and cross-network reports.
public enum LedgerAttribution {}
