import Foundation
import Glibc
import STOLFormat
import STOLTestFixtures
import XCTest

final class Ed25519Tests: XCTestCase {
    /// RFC 8032 §7.1, TEST 1–3: key derivation from the seed and deterministic signatures.
    func testRFC8032Vectors() throws {
        let vectors: [(seed: String, publicKey: String, message: String, signature: String)] = [
            ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
             "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
             "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
            ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
             "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
             "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
            ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
             "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
             "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
        ]
        for vector in vectors {
            let key = try XCTUnwrap(Ed25519.PrivateKey(seed: hexBytes(vector.seed)))
            XCTAssertEqual(key.publicKey.bytes.hexString, vector.publicKey)
            XCTAssertEqual(key.seed().hexString, vector.seed)
            let signature = key.sign(hexBytes(vector.message))
            XCTAssertEqual(signature.hexString, vector.signature)
            XCTAssertTrue(key.publicKey.isValidSignature(signature, for: hexBytes(vector.message)))
        }
    }

    func testVerificationRejectsEveryBitFlipOfSignatureAndMessageAndOtherKeys() throws {
        let key = Ed25519.PrivateKey.generate()
        let message = Array("magic ‖ version ‖ digest".utf8)
        let signature = key.sign(message)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        for index in signature.indices {
            for bit in 0..<8 {
                var bad = signature
                bad[index] ^= 1 << bit
                XCTAssertFalse(key.publicKey.isValidSignature(bad, for: message), "signature byte \(index) bit \(bit)")
            }
        }
        for index in message.indices {
            var bad = message
            bad[index] ^= 0x01
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: bad))
        }
        XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [0]))
        XCTAssertFalse(key.publicKey.isValidSignature(Array(signature.dropLast()), for: message))
        XCTAssertFalse(Ed25519.PrivateKey.generate().publicKey.isValidSignature(signature, for: message))
        XCTAssertNotEqual(Ed25519.PrivateKey.generate().publicKey, key.publicKey)
        XCTAssertNil(Ed25519.PrivateKey(seed: [UInt8](repeating: 1, count: 31)))
        XCTAssertNil(Ed25519.PublicKey(bytes: [UInt8](repeating: 1, count: 33)))
    }

    func testPrivateKeyDescriptionNeverShowsTheSeed() throws {
        let key = try XCTUnwrap(Ed25519.PrivateKey(seed: Array("STOL-TEST-KEY-DO-NOT-USE-0000001".utf8)))
        let seedHex = key.seed().hexString
        XCTAssertFalse("\(key)".contains(seedHex))
        XCTAssertFalse(String(reflecting: key).contains(seedHex))
        XCTAssertTrue("\(key)".contains(key.publicKey.bytes.hexString))
    }

    // MARK: Key files

    func testKeyFileTextRoundTripsAndMatchesTheDocumentedFormat() throws {
        let key = try XCTUnwrap(Ed25519.PrivateKey(seed: Array(0..<32)))
        let privateText = SigningKeyFile.privateKeyText(key)
        XCTAssertEqual(privateText, "STOL-ED25519-PRIVATE-KEY-V1:" + Array<UInt8>(0..<32).hexString + "\n")
        XCTAssertEqual(SigningKeyFile.publicKeyText(key.publicKey),
                       "STOL-ED25519-PUBLIC-KEY-V1:" + key.publicKey.bytes.hexString + "\n")
        let parsed = try SigningKeyFile.parsePrivateKey(Array(privateText.utf8), source: "test")
        XCTAssertEqual(parsed.publicKey, key.publicKey)
        // Whitespace around the line and upper-case hex are accepted.
        let loose = "  \r\n" + privateText.uppercased() + "\r\n"
        XCTAssertEqual(try SigningKeyFile.parsePrivateKey(Array(loose.utf8), source: "test").publicKey, key.publicKey)
        XCTAssertEqual(try SigningKeyFile.parsePublicKey(Array(SigningKeyFile.publicKeyText(key.publicKey).utf8),
                                                         source: "test"), key.publicKey)
        XCTAssertEqual(Ed25519.PublicKey(hex: key.publicKey.bytes.hexString), key.publicKey)
        XCTAssertNil(Ed25519.PublicKey(hex: "00"))
    }

    func testMalformedKeysAreRefusedWithoutEchoingTheirContent() {
        let secretHex = String(repeating: "ab", count: 32)
        let cases: [String] = [
            "", "   \n", secretHex, "STOL-ED25519-PRIVATE-KEY-V1:" + secretHex.dropLast(2),
            "STOL-ED25519-PRIVATE-KEY-V1:" + secretHex + "00", "STOL-ED25519-PRIVATE-KEY-V1:" + secretHex.dropLast() + "g",
            "STOL-ED25519-PRIVATE-KEY-V1: " + secretHex, "STOL-ED25519-PUBLIC-KEY-V1:" + secretHex,
            "STOL-ED25519-PRIVATE-KEY-V1:" + secretHex + "\nsecond line",
        ]
        for text in cases {
            XCTAssertThrowsError(try SigningKeyFile.parsePrivateKey(Array(text.utf8), source: "k")) { error in
                guard case SigningKeyError.malformed = error else { return XCTFail("\(error)") }
                XCTAssertFalse("\(error)".contains(secretHex), "the error must not echo key material")
            }
        }
        XCTAssertThrowsError(try SigningKeyFile.parsePublicKey(Array(("STOL-ED25519-PRIVATE-KEY-V1:" + secretHex).utf8),
                                                               source: "k")) { error in
            XCTAssertTrue("\(error)".contains("not a STOL-ED25519-PUBLIC-KEY-V1"), "\(error)")
        }
    }

    func testKeyFilesOnDiskPermissionsOverwriteAndEnvironment() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolkey")
        let key = Ed25519.PrivateKey.generate()
        let privatePath = directory + "/release.key", publicPath = directory + "/release.pub"
        try SigningKeyFile.writePrivateKey(key, to: privatePath, overwrite: false)
        try SigningKeyFile.writePublicKey(key.publicKey, to: publicPath, overwrite: false)
        XCTAssertEqual(try mode(privatePath), 0o600)
        XCTAssertEqual(try mode(publicPath), 0o644)
        XCTAssertEqual(try SigningKeyFile.loadPrivateKey(path: privatePath).publicKey, key.publicKey)
        XCTAssertEqual(try SigningKeyFile.loadPublicKey(path: publicPath), key.publicKey)

        // No silent replacement; with overwrite the new key is there.
        let other = Ed25519.PrivateKey.generate()
        XCTAssertThrowsError(try SigningKeyFile.writePrivateKey(other, to: privatePath, overwrite: false)) {
            guard case SigningKeyError.unwritable = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try SigningKeyFile.loadPrivateKey(path: privatePath).publicKey, key.publicKey)
        try SigningKeyFile.writePrivateKey(other, to: privatePath, overwrite: true)
        XCTAssertEqual(try SigningKeyFile.loadPrivateKey(path: privatePath).publicKey, other.publicKey)
        XCTAssertEqual(try mode(privatePath), 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).sorted(),
                       ["release.key", "release.pub"], "no temporary files are left behind")

        // A private key readable by others is refused, as ssh does.
        chmod(privatePath, 0o640)
        XCTAssertThrowsError(try SigningKeyFile.loadPrivateKey(path: privatePath)) {
            XCTAssertEqual($0 as? SigningKeyError, .permissionsTooOpen(path: privatePath, mode: 0o640))
        }
        chmod(privatePath, 0o600)

        // --key wins over the environment; the environment holds the key text itself.
        let environment = [SigningKeyFile.environmentVariable: SigningKeyFile.privateKeyText(key)]
        XCTAssertEqual(try SigningKeyFile.loadPrivateKey(path: nil, environment: environment).publicKey, key.publicKey)
        XCTAssertEqual(try SigningKeyFile.loadPrivateKey(path: privatePath, environment: environment).publicKey,
                       other.publicKey)
        XCTAssertThrowsError(try SigningKeyFile.loadPrivateKey(path: nil, environment: [:])) {
            XCTAssertEqual($0 as? SigningKeyError, .missing)
        }
        XCTAssertThrowsError(try SigningKeyFile.loadPrivateKey(path: directory + "/absent.key")) {
            guard case SigningKeyError.unreadable = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try SigningKeyFile.loadPublicKey(path: directory)) {
            guard case SigningKeyError.unreadable = $0 else { return XCTFail("\($0)") }
        }
    }

    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }
}

/// Lower-case hex (as the vector files) to bytes.
func hexBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    func value(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: preconditionFailure("not a hex digit")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}
