enum LedgerHTTPTransportPlaceholder {}
