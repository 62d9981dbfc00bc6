// Filled by the provider protocols (issue 4).
