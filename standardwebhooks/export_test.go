package standardwebhooks

// The limits and the secret prefix, for the tests of package
// standardwebhooks_test.
const (
	MaxSignatures       = maxSignatures
	MaxIDLen            = maxIDLen
	MinSigningSecretLen = minSigningSecretLen
	SecretPrefix        = secretPrefix
)
