// OpenSSL's libcrypto, for SHA-256 alone (STOLFormat's SHA256): its assembly uses
// the CPU's SHA extensions where they exist, about 8 times libsodium's portable C.
// The low-level SHA256_* functions, deprecated in OpenSSL 3 for EVP, are used on
// purpose: EVP would load a provider, and with it the configuration file, inside
// the verifier's sandbox; these touch no file and make no system call.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
