import Glibc
import STOLTestFixtures
import STOLTransport
import XCTest

final class PeerCredentialsTests: XCTestCase {
    func testCredentialsOverASocketpairAreThoseOfThisProcess() throws {
        let (a, b) = try makeSocketPair()
        defer { close(a); close(b) }
        let peer = try PeerCredentials(socket: a)
        XCTAssertEqual(peer.uid, getuid())
        XCTAssertEqual(peer.gid, getgid())
        XCTAssertEqual(peer.pid, getpid())
        // Both ends were created by this process.
        XCTAssertEqual(try PeerCredentials(socket: b), peer)
    }

    func testSupplementaryGroupsAreThoseOfThisProcess() throws {
        let (a, b) = try makeSocketPair()
        defer { close(a); close(b) }
        let count = getgroups(0, nil)
        var own = [gid_t](repeating: 0, count: Int(max(count, 0)))
        XCTAssertEqual(getgroups(count, &own), count)
        XCTAssertEqual(Set(try PeerCredentials(socket: a).groups), Set(own))
    }

    func testCredentialsOfAFrameSocketPeer() throws {
        let (client, server) = try makeFrameSocketPair()
        _ = client
        let peer = try server.peerCredentials()
        XCTAssertEqual(peer.uid, getuid())
        XCTAssertEqual(peer.pid, getpid())
    }

    func testLookupOnANonSocketFails() throws {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        XCTAssertThrowsError(try PeerCredentials(socket: fds[0])) { error in
            XCTAssertEqual(error as? PeerCredentials.LookupError, .getsockopt(errno: ENOTSOCK))
        }
    }

    func testRootIsAlwaysAllowed() {
        let root = PeerCredentials(pid: 1, uid: 0, gid: 0)
        XCTAssertTrue(root.isRootOrMember(ofGroup: 4242))
        XCTAssertTrue(root.isRootOrMember(ofGroup: nil), "root passes even when the admin group does not exist")
    }

    func testMemberByPrimaryOrSupplementaryGroupIsAllowed() {
        XCTAssertTrue(PeerCredentials(pid: 10, uid: 1000, gid: 4242).isRootOrMember(ofGroup: 4242))
        XCTAssertTrue(PeerCredentials(pid: 10, uid: 1000, gid: 1000, groups: [27, 4242]).isRootOrMember(ofGroup: 4242))
    }

    func testNonMemberIsRefused() {
        let user = PeerCredentials(pid: 10, uid: 1000, gid: 1000, groups: [27, 100])
        XCTAssertFalse(user.isRootOrMember(ofGroup: 4242))
        XCTAssertFalse(user.isRootOrMember(ofGroup: nil), "a missing admin group admits nobody but root")
        // A uid equal to the group's number is not membership.
        XCTAssertFalse(PeerCredentials(pid: 10, uid: 4242, gid: 1000).isRootOrMember(ofGroup: 4242))
    }

    func testDescriptionDoesNotRevealTheUid() {
        let description = PeerCredentials(pid: 321, uid: 987_654, gid: 55).description
        XCTAssertFalse(description.contains("987654"))
        XCTAssertTrue(description.contains("321"))
    }

    func testGroupLookupByName() {
        XCTAssertEqual(groupID(named: "root"), 0)
        XCTAssertNil(groupID(named: "stol-no-such-group-\(getpid())"))
    }
}
