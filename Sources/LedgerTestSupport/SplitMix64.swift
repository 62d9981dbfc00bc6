/// A small seeded random number generator (SplitMix64) for property and fuzz tests: the same
/// seed gives the same values on every machine, so a failing seed replays.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state.
    public var state: UInt64

    /// A generator that starts from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value below `bound` (which must not be 0); slightly biased, which tests do not mind.
    public mutating func next(upTo bound: UInt64) -> UInt64 { next() % bound }
}
