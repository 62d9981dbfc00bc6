/// The HTTP API of the attribution ledger.
public enum LedgerHTTPAPIModule {}
