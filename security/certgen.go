package security

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA is a private certificate authority for test and small deployments
// (kbroker tls init): ECDSA P-256 keys, SHA-256 signatures.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// CertRequest describes a certificate for CA.Issue.
type CertRequest struct {
	Subject  pkix.Name
	DNSNames []string
	IPs      []net.IP
	// NotBefore defaults to an hour ago (to absorb clock skew);
	// NotAfter to NotBefore plus a year.
	NotBefore, NotAfter time.Time
	// ServerAuth and ClientAuth set the extended key usages.
	ServerAuth, ClientAuth bool
}

// NewCA makes a self-signed CA valid from now-1h to now+validFor.
func NewCA(subject pkix.Name, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               subject,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Issue makes a new key and a certificate for it signed by the CA.
func (ca *CA) Issue(req CertRequest) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if req.NotBefore.IsZero() {
		req.NotBefore = time.Now().Add(-time.Hour)
	}
	if req.NotAfter.IsZero() {
		req.NotAfter = req.NotBefore.Add(365 * 24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
		NotBefore:    req.NotBefore,
		NotAfter:     req.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if req.ServerAuth {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.ClientAuth {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate for %s: %w", req.Subject, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return n.Add(n, big.NewInt(1)) // serials must be positive
}

// CertPEM encodes certificates as PEM CERTIFICATE blocks, in order.
func CertPEM(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// KeyPEM encodes a private key as an unencrypted PKCS#8 "PRIVATE KEY"
// block, the form Kafka's PEM keystore reads.
func KeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
