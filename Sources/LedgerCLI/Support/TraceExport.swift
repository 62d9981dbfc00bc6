import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Tracing
#if OTLPExport
import OTel
#endif

/// Trace export for `ledger serve` and `ledger worker`: OTLP/HTTP (protobuf) through swift-otel
/// when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, in a build with the `OTLPExport` package trait
/// (`swift build --traits OTLPExport`). Unset, the process keeps swift-distributed-tracing's
/// no-op tracer: the spans the libraries start cost next to nothing and go nowhere.
///
/// swift-otel reads the standard variables itself: `OTEL_SERVICE_NAME` (default `ledger-serve` or
/// `ledger-worker`), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
/// `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER`, … Propagation is W3C Trace Context.
/// Logs and metrics are not sent over OTLP: metrics are Prometheus (`/metrics`), logs go to stderr.
enum TraceExport {
    /// The variable that turns export on.
    static let endpointVariable = "OTEL_EXPORTER_OTLP_ENDPOINT"

    /// Whether this build holds the OTLP exporter (the `OTLPExport` trait).
    static var isBuiltIn: Bool {
        #if OTLPExport
        return true
        #else
        return false
        #endif
    }

    /// Bootstraps the process's tracer when export is configured, and returns the exporter's
    /// service: run it first in the command's group, so that it stops last and flushes the spans
    /// of the services that stopped before it. Nil when nothing is exported (the variable unset,
    /// or a build without the exporter: then a warning says so on stderr, and the command runs on
    /// without export rather than fail for want of telemetry).
    /// - Parameters:
    ///   - command: `serve` or `worker`, for the default service name.
    ///   - environment: the process's environment.
    /// - Throws: ``CLIFailure`` (exit 64) with swift-otel's refusal of the configuration (an
    ///   unknown `OTEL_TRACES_SAMPLER`, a protocol this build lacks).
    static func bootstrap(command: String, environment: [String: String]) throws -> (any Service)? {
        guard let endpoint = environment[endpointVariable], !endpoint.isEmpty else { return nil }
        #if OTLPExport
        var configuration = OTel.Configuration.default
        configuration.serviceName = "ledger-\(command)"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        do {
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(tracer)
            return service
        } catch {
            throw CLIFailure(exitCode: .validationFailure, message: "ledger \(command): trace export: \(error)")
        }
        #else
        FileHandle.standardError.write(Data("""
            ledger \(command): warning: \(endpointVariable) is set, but this build has no OTLP exporter \
            (build with `swift build --traits OTLPExport`); traces are not exported

            """.utf8))
        return nil
        #endif
    }
}
