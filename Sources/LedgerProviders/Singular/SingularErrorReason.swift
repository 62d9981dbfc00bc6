/// Why Singular refused a conversion value request: the `reason` of an error answer, recognised as
/// one of the Singular SKAdNetwork 4 implementation guide's "Possíveis erros de resposta" and
/// always kept as received.
///
/// Recognition is by phrase, case-insensitively, in English (the API's language) and in the
/// Portuguese of the guide, because the guide gives only translations of the messages and their
/// `%x` parts vary.
public struct SingularErrorReason: Sendable, Hashable, Codable {
    /// The documented reasons.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// "More than 24 hours since the last conversion update (N hours), the update window is
        /// closed" — hours counted as last call minus first call.
        case updateWindowClosed = "update_window_closed"
        /// "Unknown platform error – non-iOS platform".
        case unknownPlatform = "unknown_platform"
        /// "Conversion management: invalid parameter %x given".
        case invalidParameter = "invalid_parameter"
        /// "Conversion management: conversion model not found for app: %x".
        case conversionModelNotFound = "conversion_model_not_found"
        /// "Invalid measurement period: %x".
        case invalidMeasurementPeriod = "invalid_measurement_period"
        /// "Conversion management: can't find owner currency: %customer".
        case ownerCurrencyNotFound = "owner_currency_not_found"
        /// Any other reason, or none.
        case unrecognized
    }

    /// Which documented reason this is.
    public var kind: Kind
    /// The reason text exactly as Singular sent it.
    public var text: String

    /// The snippet's text when an error answer has no `reason`.
    public static let missingReasonText = "Got error from server"

    /// Recognises `text`.
    public init(_ text: String) {
        self.text = text
        self.kind = Self.recognise(text)
    }

    private static let phrases: [(Kind, [String])] = [
        (.updateWindowClosed, ["window is closed", "window closed", "janela de atualização está fechada", "janela de atualização fechada"]),
        (.unknownPlatform, ["unknown platform", "plataforma desconhecida"]),
        (.conversionModelNotFound, ["conversion model not found", "modelo de conversão não encontrado"]),
        (.invalidMeasurementPeriod, ["invalid measurement period", "período de medição inválido"]),
        (.ownerCurrencyNotFound, ["owner currency", "moeda do proprietário"]),
        (.invalidParameter, ["invalid parameter", "parâmetro inválido"]),
    ]

    private static func recognise(_ text: String) -> Kind {
        let lower = text.lowercased()
        for (kind, needles) in phrases where needles.contains(where: { lower.contains($0) }) { return kind }
        return .unrecognized
    }
}
