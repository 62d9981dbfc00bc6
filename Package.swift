// swift-tools-version: 6.2
//
// The attribution ledger. One module per layer; every target, top to bottom, with the modules it
// imports, each of them further down (arrows a longer path implies are left out; the targets
// below list every direct dependency; docs/architecture.md draws the same graph):
//
//   LedgerCLI (ledger)          ─▶ LedgerConfiguration, LedgerHTTPTransport, LedgerFakeProviders,
//                                  LedgerMigrations, LedgerPrivateCluster, LedgerLogging
//   LedgerConfiguration         ─▶ LedgerHTTPAPI
//   LedgerBench (ledger-bench)  ─▶ LedgerHTTPAPI, LedgerHTTPTransport, LedgerFakeProviders,
//                                  LedgerTestSupport
//   LedgerHTTPAPI               ─▶ AttributionLedger, LedgerTimeline
//   AttributionLedger           ─▶ LedgerDecisions, LedgerSKANPostbacks
//   LedgerTimeline              ─▶ LedgerDecisions
//   LedgerDecisions             ─▶ LedgerDispatch, LedgerProjections
//   LedgerHTTPTransport         ─▶ LedgerDispatch
//   LedgerSKANPostbacks         ─▶ LedgerProjections
//   LedgerProjections           ─▶ LedgerFolds, LedgerStore
//   LedgerDispatch              ─▶ LedgerFolds, LedgerStore
//   LedgerFolds                 ─▶ LedgerProviders
//   LedgerTestKit               ─▶ LedgerFakeProviders, LedgerTestSupport, LedgerStore
//   LedgerFakeProviders         ─▶ LedgerProviders
//   LedgerTestSupport           ─▶ LedgerMigrations, LedgerPrivateCluster
//   LedgerStore                 ─▶ LedgerPostgres, LedgerDomain
//   LedgerProviders             ─▶ LedgerDomain
//   LedgerMigrations            ─▶ LedgerPostgres
//   LedgerPrivateCluster        ─▶ LedgerPostgres
//   LedgerPostgres              ─▶ CLedgerPQ (libpq-fe.h)
//   LedgerDomain, CLedgerPQ,
//   LedgerLogging                  import no other module of the ledger
//
// Test targets import their module, what they need below it, and LedgerTestKit alone for their
// support: the `.database` mark of tests that run against PostgreSQL, store fixtures, fake
// providers whose anomalies fail the test, metrics scoped per test, and (re-exported)
// LedgerTestSupport's fresh databases, log capture and seeded randomness.
import PackageDescription

/// Strict from day one: Swift 6 mode (the tools default), and every warning is an error.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "attribution-ledger",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ledger", targets: ["LedgerCLI"]),
        .executable(name: "ledger-bench", targets: ["LedgerBench"]),
        .library(name: "LedgerPostgres", targets: ["LedgerPostgres"]),
        .library(name: "LedgerProviders", targets: ["LedgerProviders"]),
        .library(name: "LedgerStore", targets: ["LedgerStore"]),
        .library(name: "LedgerDomain", targets: ["LedgerDomain"]),
        .library(name: "LedgerFolds", targets: ["LedgerFolds"]),
        .library(name: "LedgerProjections", targets: ["LedgerProjections"]),
        .library(name: "LedgerDispatch", targets: ["LedgerDispatch"]),
        .library(name: "LedgerDecisions", targets: ["LedgerDecisions"]),
        .library(name: "LedgerSKANPostbacks", targets: ["LedgerSKANPostbacks"]),
        // The Swift API backends add as a dependency.
        .library(name: "AttributionLedger", targets: ["AttributionLedger"]),
        .library(name: "LedgerHTTPAPI", targets: ["LedgerHTTPAPI"]),
    ],
    // Opt-in: `swift build --traits OTLPExport` builds the OTLP/HTTP trace exporter (swift-otel)
    // into `ledger`, which `serve` and `worker` then use when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    // Off by default: swift-otel and SwiftProtobuf add minutes to every cold build, twice in CI.
    // The spans themselves (swift-distributed-tracing) are always built in.
    traits: [
        .trait(name: "OTLPExport", description: "Export traces over OTLP/HTTP (swift-otel) from ledger serve and ledger worker"),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // libpq's C API. Only LedgerPostgres imports it.
        .systemLibrary(
            name: "CLedgerPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // A safe Swift wrapper over libpq: connections, bound parameters, typed rows, errors with
        // SQLSTATE, transactions, COPY, LISTEN/NOTIFY, and a pool that keeps blocking libpq calls
        // off Swift's cooperative thread pool.
        .target(
            name: "LedgerPostgres",
            dependencies: [
                "CLedgerPQ", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // The private PostgreSQL cluster started when no LEDGER_DATABASE_URL is configured.
        .target(
            name: "LedgerPrivateCluster",
            dependencies: ["LedgerPostgres", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // Numbered plain-SQL migrations from schema/, applied once each, in a transaction.
        .target(
            name: "LedgerMigrations",
            dependencies: ["LedgerPostgres", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The domain: event types and their catalog, identifiers, money, clocks. Pure.
        .target(name: "LedgerDomain", swiftSettings: strict),
        // The event store: append, read, subscribe, verify.
        .target(
            name: "LedgerStore",
            dependencies: [
                "LedgerPostgres", "LedgerDomain", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"), .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // Pure provider protocols (no I/O), on the domain's values; Crypto for the webhook
        // deliveries' HMAC-SHA256 signatures.
        .target(
            name: "LedgerProviders",
            dependencies: ["LedgerDomain", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // Device folds: pure reducers over events. The per-device states (SKAN 4, AdServices
        // tokens, Branch identity, Google obligations, the attribution process), no I/O.
        .target(
            name: "LedgerFolds",
            dependencies: [
                "LedgerDomain", "LedgerProviders", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Projections: the checkpointed runner, online rebuild into shadow tables, and the
        // per-device projections that store the folds' states.
        .target(
            name: "LedgerProjections",
            dependencies: [
                "LedgerFolds", "LedgerStore", "LedgerDomain", "LedgerProviders", "LedgerPostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Dispatch: the transactional outbox, the send queue, the worker loop and each provider's
        // retry rules. Talks HTTP only through a `ProviderTransport`.
        .target(
            name: "LedgerDispatch",
            dependencies: [
                "LedgerStore", "LedgerDomain", "LedgerProviders", "LedgerFolds", "LedgerPostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // The production `ProviderTransport`: AsyncHTTPClient, timeouts, connection reuse.
        .target(
            name: "LedgerHTTPTransport",
            dependencies: [
                "LedgerDispatch", "LedgerProviders",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Fake Google, Apple AdServices, Branch and Singular servers on loopback, following the
        // documents (404/429/500 included), scriptable per test. Tests, benchmarks and the demo only.
        .target(
            name: "LedgerFakeProviders",
            dependencies: [
                "LedgerProviders", "LedgerDomain",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Swift Testing helpers the test targets share: the `.database` mark, stores on fresh
        // databases, fake providers whose anomalies end every test that uses them, and metrics
        // scoped to the test that caused them. Tests only.
        .target(
            name: "LedgerTestKit",
            dependencies: [
                "LedgerFakeProviders", "LedgerProviders", "LedgerTestSupport", "LedgerStore", "LedgerDomain", "LedgerPostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // Attribution: what each device fact causes (the sends it requests, in its transaction),
        // the versioned last-click rule, the decider that waits for every provider or a deadline,
        // and Google cross-network reporting.
        .target(
            name: "LedgerDecisions",
            dependencies: [
                "LedgerDispatch", "LedgerProjections", "LedgerFolds", "LedgerStore", "LedgerDomain", "LedgerProviders",
                "LedgerPostgres", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // SKAdNetwork postbacks: ingest, Apple signature verification, deduplication, decoding
        // with per-app conversion models, and the installs/conversions projection.
        .target(
            name: "LedgerSKANPostbacks",
            dependencies: [
                "LedgerProjections", "LedgerStore", "LedgerDomain", "LedgerPostgres",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The service facade: the Swift API backends call (record facts, read state, erase).
        .target(
            name: "AttributionLedger",
            dependencies: [
                "LedgerDecisions", "LedgerSKANPostbacks", "LedgerDispatch", "LedgerProjections", "LedgerFolds", "LedgerStore",
                "LedgerDomain", "LedgerPostgres", "LedgerProviders",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // A device's timeline drawn: one self-contained HTML page with inline SVG, from the
        // explanation `ledger explain` prints; `ledger explain --html` and the HTTP API's
        // timeline route both render it. Plain string building with one escaping helper.
        .target(
            name: "LedgerTimeline",
            dependencies: [
                "LedgerDecisions", "LedgerDispatch", "LedgerProjections", "LedgerFolds", "LedgerStore", "LedgerDomain", "LedgerProviders",
            ],
            swiftSettings: strict
        ),
        // The HTTP API (Hummingbird) for non-Swift services, over the facade.
        .target(
            name: "LedgerHTTPAPI",
            dependencies: [
                "AttributionLedger", "LedgerTimeline", "LedgerDecisions", "LedgerDomain", "LedgerStore", "LedgerProviders", "LedgerPostgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // Configuration: the apps file (each app's keys, provider credentials and settings) over
        // the older environment variables, checked at start-up and reloaded on SIGHUP.
        .target(
            name: "LedgerConfiguration",
            dependencies: ["LedgerDecisions", "LedgerDispatch", "LedgerDomain", "LedgerHTTPAPI", "LedgerProviders"],
            swiftSettings: strict
        ),
        // The processes' log format: a swift-log handler writing one JSON object per line, and the
        // choice of format and level from the environment. swift-log only.
        .target(
            name: "LedgerLogging",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // The `ledger` command.
        .executableTarget(
            name: "LedgerCLI",
            dependencies: [
                "LedgerConfiguration", "LedgerLogging",
                "LedgerPostgres", "LedgerPrivateCluster", "LedgerMigrations", "LedgerStore", "LedgerProjections", "LedgerFolds",
                "LedgerDispatch", "LedgerHTTPTransport", "LedgerDomain", "LedgerDecisions", "LedgerSKANPostbacks",
                "AttributionLedger", "LedgerHTTPAPI", "LedgerFakeProviders", "LedgerTimeline",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLPExport"])),
            ],
            swiftSettings: strict
        ),
        // Test support: fresh migrated databases on the private cluster. Used by tests,
        // benchmarks and the demo; never by the production path.
        .target(
            name: "LedgerTestSupport",
            dependencies: ["LedgerPostgres", "LedgerPrivateCluster", "LedgerMigrations"],
            swiftSettings: strict
        ),
        // Benchmarks: `swift run -c release ledger-bench [NAME]`, one JSON line per measurement.
        .executableTarget(
            name: "LedgerBench",
            dependencies: [
                "LedgerPostgres", "LedgerStore", "LedgerProjections", "LedgerFolds", "LedgerDomain", "LedgerTestSupport", "LedgerDispatch",
                "LedgerHTTPTransport", "LedgerFakeProviders", "LedgerSKANPostbacks", "LedgerDecisions", "AttributionLedger",
                "LedgerHTTPAPI", "LedgerProviders",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerPostgresTests",
            dependencies: [
                "LedgerPostgres", "LedgerTestKit", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerLoggingTests",
            dependencies: ["LedgerLogging", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerDomainTests",
            dependencies: ["LedgerDomain", "LedgerTestKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerProvidersTests",
            dependencies: ["LedgerProviders", "LedgerDomain", "LedgerTestKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerStoreTests",
            dependencies: ["LedgerStore", "LedgerDomain", "LedgerMigrations", "LedgerPostgres", "LedgerTestKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerFoldsTests",
            dependencies: ["LedgerFolds", "LedgerDomain", "LedgerProviders", "LedgerTestKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerProjectionsTests",
            dependencies: [
                "LedgerProjections", "LedgerFolds", "LedgerStore", "LedgerDomain", "LedgerProviders", "LedgerPostgres",
                "LedgerTestKit", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerDispatchTests",
            dependencies: [
                "LedgerTestKit", "LedgerDispatch", "LedgerHTTPTransport", "LedgerFakeProviders", "LedgerFolds", "LedgerStore",
                "LedgerDomain", "LedgerProviders", "LedgerPostgres",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerHTTPTransportTests",
            dependencies: [
                "LedgerTestKit", "LedgerHTTPTransport", "LedgerFakeProviders", "LedgerDispatch", "LedgerProviders", "LedgerDomain",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerDecisionsTests",
            dependencies: [
                "LedgerTestKit", "LedgerDecisions", "LedgerDispatch", "LedgerHTTPTransport", "LedgerFakeProviders", "LedgerProjections",
                "LedgerFolds", "LedgerStore", "LedgerDomain", "LedgerProviders", "LedgerPostgres",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerSKANPostbacksTests",
            dependencies: [
                "LedgerSKANPostbacks", "LedgerProjections", "LedgerStore", "LedgerDomain", "LedgerPostgres", "LedgerTestKit",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AttributionLedgerTests",
            dependencies: [
                "AttributionLedger", "LedgerDecisions", "LedgerDispatch", "LedgerProjections", "LedgerFolds", "LedgerStore", "LedgerDomain",
                "LedgerPostgres", "LedgerProviders", "LedgerTestKit", "LedgerFakeProviders", "LedgerHTTPTransport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerHTTPAPITests",
            dependencies: [
                "LedgerTestKit", "LedgerHTTPAPI", "AttributionLedger", "LedgerStore", "LedgerDomain", "LedgerPostgres",
                "LedgerDispatch", "LedgerHTTPTransport", "LedgerFakeProviders", "LedgerProviders",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerConfigurationTests",
            dependencies: [
                "LedgerConfiguration", "LedgerDecisions", "LedgerDispatch", "LedgerDomain", "LedgerHTTPAPI", "LedgerProviders",
                "LedgerTestKit",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerMigrationsTests",
            dependencies: ["LedgerMigrations", "LedgerPostgres", "LedgerTestKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LedgerCLITests",
            dependencies: [
                "LedgerTestKit", "LedgerCLI", "LedgerPostgres", "LedgerStore", "LedgerProjections", "LedgerFolds", "LedgerDomain",
                "LedgerProviders",
                "LedgerPrivateCluster", "LedgerDispatch", "LedgerFakeProviders", "LedgerDecisions", "LedgerSKANPostbacks",
                "AttributionLedger", .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
    ]
)
