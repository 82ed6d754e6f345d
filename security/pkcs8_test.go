package security

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecryptOpenSSLKeys decrypts keys OpenSSL encrypted (testdata/README)
// and compares them with the plain key.
func TestDecryptOpenSSLKeys(t *testing.T) {
	plainPEM, err := os.ReadFile("testdata/rsa-plain.pem")
	if err != nil {
		t.Fatal(err)
	}
	want, err := parsePrivateKey(plainPEM, "", "plain")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file, password, wantErr string
	}{
		{"rsa-pbes2-aes256.pem", "key-secret", ""},
		{"rsa-pbes2-aes128-sha1.pem", "key-secret", ""},
		{"rsa-pbes2-des3.pem", "key-secret", ""},
		{"rsa-legacy-aes256.pem", "key-secret", ""},
		{"rsa-pbes2-aes256.pem", "wrong", "wrong ssl.key.password"},
		{"rsa-legacy-aes256.pem", "wrong", "wrong ssl.key.password"},
		{"rsa-pbes2-aes256.pem", "", "ssl.key.password is not set"},
		{"rsa-pbes1.pem", "key-secret", "only PBES2"},
	}
	for _, tc := range cases {
		t.Run(tc.file+"/"+tc.password, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parsePrivateKey(data, tc.password, tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.file) {
					t.Fatalf("err=%v, want %q naming the file", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !want.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(got.Public()) {
				t.Fatal("decrypted key differs from the plain key")
			}
		})
	}
}

// encryptPKCS8 is the inverse of decryptPKCS8 (PBES2, PBKDF2-HMAC-SHA256,
// AES-256-CBC), for tests that need an encrypted keystore.
func encryptPKCS8(t *testing.T, der []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(der)%16
	data := append(append([]byte(nil), der...), []byte(strings.Repeat(string(rune(pad)), pad))...)
	block, _ := aes.NewCipher(key)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(data, data)
	mustMarshal := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kdf := mustMarshal(pbkdf2Params{Salt: salt, Iterations: 2048, PRF: pkix.AlgorithmIdentifier{
		Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, Parameters: asn1.NullRawValue}})
	params := mustMarshal(pbes2Params{
		KeyDerivationFunc: pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: kdf}},
		EncryptionScheme:  pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, Parameters: asn1.RawValue{FullBytes: mustMarshal(iv)}},
	})
	return mustMarshal(encryptedPrivateKeyInfo{
		Algorithm:     pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: params}},
		EncryptedData: data,
	})
}

// encryptedStore rewrites the keystore at path with its key encrypted
// under "key-secret" and returns the new file's path.
func encryptedStore(t *testing.T, dir, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := pemBlocks(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, b := range blocks {
		if b.Type == "PRIVATE KEY" {
			b = &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: encryptPKCS8(t, b.Bytes, "key-secret")}
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
	enc := filepath.Join(dir, "encrypted-"+filepath.Base(path))
	if err := os.WriteFile(enc, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return enc
}

func TestEncryptedKeystore(t *testing.T) {
	p := newTestPKI(t)
	enc := encryptedStore(t, p.dir, p.serverCert("kb1"))
	s := mustStore(t, map[string]string{"ssl.keystore.location": enc, "ssl.key.password": "key-secret"})
	cli := mustStore(t, map[string]string{"ssl.truststore.location": p.caFile()})
	if _, _, serr, cerr := handshake(t, mustServer(t, s), cli.ClientConfig("kb1")); serr != nil || cerr != nil {
		t.Fatalf("server %v client %v", serr, cerr)
	}
}
