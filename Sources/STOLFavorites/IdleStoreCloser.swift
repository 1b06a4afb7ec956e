import Logging
import ServiceLifecycle

/// Closes the stores of idle users (``FavoritesRegistry/closeIdleStores(unusedSince:)``)
/// every quarter of the idle timeout, so a store is closed between one and one
/// and a quarter timeouts after its last use, however quiet the daemon is. Runs
/// beside the server in the daemon's service group and ends with it.
public struct IdleStoreCloser: Service {
    private let registry: FavoritesRegistry

    public init(registry: FavoritesRegistry) {
        self.registry = registry
    }

    public func run() async throws {
        let timeout = registry.limits.idleTimeout
        let period = timeout / 4
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: period) } catch { return }  // cancelled: the daemon is stopping
                await registry.closeIdleStores(unusedSince: .now - timeout)
            }
        }
    }
}
