enum LedgerFakeProvidersPlaceholder {}
