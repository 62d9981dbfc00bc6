import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProviders
import LedgerStore

/// Where ``SKANDeviceReducer``'s states are stored: the windows and values per device
/// (`window_closes_at` indexed).
extension SKANDeviceReducer: DeviceStateStorage {
    /// Of a revenue event's personal fields, only `transaction_id` (hashed, for the duplicate
    /// check); the device's identifiers are never read.
    public var personalFieldsRead: PersonalFieldSelection {
        .only([RevenueRecorded.eventType: ["transaction_id"]])
    }

    public var summaryColumns: [ProjectionColumn] {
        [
            ProjectionColumn("first_call_at", "timestamptz"),
            ProjectionColumn("window_closes_at", "timestamptz", indexed: true),
            ProjectionColumn("conversion_value", "integer"),
            ProjectionColumn("p0_coarse", "integer"),
            ProjectionColumn("p1_coarse", "integer"),
            ProjectionColumn("p2_coarse", "integer"),
            ProjectionColumn("last_call_at", "timestamptz"),
        ]
    }

    public func summary(of state: State) -> [PostgresValue] {
        let skan = state.skan
        func time(_ seconds: Int64?) -> PostgresValue {
            seconds.map { .timestamptz(Date(timeIntervalSince1970: Double($0))) } ?? .null
        }
        func number(_ value: Int?) -> PostgresValue { value.map { .int64(Int64($0)) } ?? .null }
        return [
            time(skan.firstCallTimestamp), time(skan.firstCallTimestamp.map { $0 + 35 * 86_400 }),
            number(skan.conversionValue), number(skan.p0Coarse?.rawValue), number(skan.p1Coarse?.rawValue),
            number(skan.p2Coarse?.rawValue), time(skan.lastCallTimestamp),
        ]
    }
}

/// The SKAN projection: ``SKANDeviceReducer``'s states in `skan_devices`.
public typealias SKANDeviceProjection = DeviceStateProjection<SKANDeviceReducer>
