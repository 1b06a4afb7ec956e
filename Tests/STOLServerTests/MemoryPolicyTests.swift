import STOLServer
import XCTest

/// The serving daemons' allocator (``MemoryPolicy``): this bundle links STOLServer
/// as the daemons do, so the dynamic linker binds its `malloc` the same way.
/// (`make check-modules` checks the daemons' own NEEDED order.)
final class MemoryPolicyTests: XCTestCase {
    func testMalloc_isMimallocs_notGlibcs() {
        XCTAssertTrue(MemoryPolicy.usesMimalloc, "a block from malloc is not in mimalloc's heap: glibc serves malloc")
        XCTAssertGreaterThanOrEqual(MemoryPolicy.mimallocVersion, 200)
    }

}
