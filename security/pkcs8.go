package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// PKCS#5 v2 (RFC 8018) identifiers for "ENCRYPTED PRIVATE KEY" PEM blocks,
// the form Kafka accepts for an encrypted PEM key with ssl.key.password.
var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}

	prfByOID = map[string]func() hash.Hash{
		"1.2.840.113549.2.7":  sha1.New, // hmacWithSHA1, the default PRF
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}

	// cipher OID -> key length and block constructor.
	cipherByOID = map[string]struct {
		keyLen   int
		newBlock func([]byte) (cipher.Block, error)
	}{
		"2.16.840.1.101.3.4.1.2":  {16, aes.NewCipher}, // aes128-CBC
		"2.16.840.1.101.3.4.1.22": {24, aes.NewCipher}, // aes192-CBC
		"2.16.840.1.101.3.4.1.42": {32, aes.NewCipher}, // aes256-CBC
		"1.2.840.113549.3.7":      {24, des.NewTripleDESCipher},
	}
)

// maxPBKDF2Iterations keeps a corrupt or hostile key file from pinning a
// CPU at startup; real files use 2048 (OpenSSL) to a few hundred thousand.
const maxPBKDF2Iterations = 10_000_000

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// errWrongKeyPassword is reported when decryption yields garbage, which is
// what a wrong password looks like.
var errWrongKeyPassword = errors.New("cannot decrypt the private key: wrong ssl.key.password or corrupt key")

// decryptPKCS8 decrypts a DER EncryptedPrivateKeyInfo (PBES2 with PBKDF2
// and AES-CBC or 3DES-CBC) into a DER PrivateKeyInfo.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("malformed ENCRYPTED PRIVATE KEY: %w", err)
	} else if len(rest) != 0 {
		return nil, fmt.Errorf("malformed ENCRYPTED PRIVATE KEY: %d bytes after it", len(rest))
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY uses %v; only PBES2 (PKCS#5 v2, e.g. openssl pkcs8 -topk8 -v2 aes-256-cbc) is supported", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("malformed PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("PBES2 key derivation %v is not supported (only PBKDF2)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("malformed PBKDF2 parameters: %w", err)
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("PBKDF2 iteration count %d outside [1, %d]", kdf.Iterations, maxPBKDF2Iterations)
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) > 0 {
		var ok bool
		if prf, ok = prfByOID[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("PBKDF2 PRF %v is not supported", kdf.PRF.Algorithm)
		}
	}
	c, ok := cipherByOID[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("PBES2 cipher %v is not supported (AES-128/192/256-CBC, DES-EDE3-CBC)", params.EncryptionScheme.Algorithm)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != c.keyLen {
		return nil, fmt.Errorf("PBKDF2 key length %d does not fit the cipher (%d)", kdf.KeyLength, c.keyLen)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("malformed cipher IV: %w", err)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iterations, c.keyLen)
	if err != nil {
		return nil, fmt.Errorf("PBKDF2: %w", err)
	}
	block, err := c.newBlock(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != block.BlockSize() {
		return nil, fmt.Errorf("cipher IV is %d bytes, want %d", len(iv), block.BlockSize())
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, errors.New("encrypted key length is not a multiple of the cipher block size")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	return unpadPKCS7(plain, block.BlockSize())
}

// unpadPKCS7 strips RFC 8018 padding. The check is not constant time: the
// password is the operator's own, there is no oracle to protect.
func unpadPKCS7(b []byte, blockSize int) ([]byte, error) {
	n := int(b[len(b)-1])
	if n == 0 || n > blockSize || n > len(b) {
		return nil, errWrongKeyPassword
	}
	for _, p := range b[len(b)-n:] {
		if int(p) != n {
			return nil, errWrongKeyPassword
		}
	}
	return b[:len(b)-n], nil
}
