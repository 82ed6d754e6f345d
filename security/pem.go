package security

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"regexp"
	"time"
)

// pemRE finds PEM blocks without relying on line structure, so PEM pasted
// on one line (as inline ssl.keystore.key values are after a properties
// file joins '\' continuations) still decodes: Kafka's parser ignores the
// line structure too.
var pemRE = regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END ([A-Z0-9 ]+)-----`)

func pemBlocks(data []byte) ([]*pem.Block, error) {
	var blocks []*pem.Block
	for _, m := range pemRE.FindAllSubmatchIndex(data, -1) {
		typ, body, endTyp := string(data[m[2]:m[3]]), data[m[4]:m[5]], string(data[m[6]:m[7]])
		if typ != endTyp {
			return nil, fmt.Errorf("PEM block BEGIN %s ends with END %s", typ, endTyp)
		}
		if bytes.Contains(body, []byte(":")) {
			// Headers (legacy Proc-Type encryption) only come from
			// files, with their lines intact: let encoding/pem parse.
			b, _ := pem.Decode(data[m[0]:m[1]])
			if b == nil {
				return nil, fmt.Errorf("malformed PEM %s block", typ)
			}
			blocks = append(blocks, b)
			continue
		}
		der, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil)))
		if err != nil {
			return nil, fmt.Errorf("malformed PEM %s block: %w", typ, err)
		}
		blocks = append(blocks, &pem.Block{Type: typ, Bytes: der})
	}
	return blocks, nil
}

// parseCertificates returns every CERTIFICATE block of data.
func parseCertificates(data []byte, source string) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", source, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE found", source)
	}
	return certs, nil
}

// parsePrivateKey returns the one private key in data, decrypting it with
// password when it is encrypted.
func parsePrivateKey(data []byte, password, source string) (crypto.Signer, error) {
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var found *pem.Block
	for _, b := range blocks {
		switch b.Type {
		case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if found != nil {
				return nil, fmt.Errorf("%s: more than one private key", source)
			}
			found = b
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no PEM private key found", source)
	}
	der := found.Bytes
	switch {
	case found.Type == "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, fmt.Errorf("%s: the private key is encrypted but ssl.key.password is not set", source)
		}
		if der, err = decryptPKCS8(der, password); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		found = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	case found.Headers["Proc-Type"] == "4,ENCRYPTED":
		// OpenSSL's legacy PEM encryption (openssl rsa -aes256): weak key
		// derivation, kept only because old key files use it.
		if password == "" {
			return nil, fmt.Errorf("%s: the private key is encrypted but ssl.key.password is not set", source)
		}
		// x509.DecryptPEMBlock is deprecated because RFC 1423 encryption
		// is unauthenticated; Kafka (Java) reads such keys, and a broker
		// replacing it must load the key files it was given.
		if der, err = x509.DecryptPEMBlock(found, []byte(password)); err != nil { //nolint:staticcheck // SA1019: legacy "Proc-Type: 4,ENCRYPTED" keys are supported on purpose, for Kafka compatibility.
			return nil, fmt.Errorf("%s: %w", source, errWrongKeyPassword)
		}
	}
	key, err := parseDERKey(found.Type, der)
	if err != nil {
		if found.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return nil, fmt.Errorf("%s: %w", source, errWrongKeyPassword)
		}
		return nil, fmt.Errorf("%s: %s: %w", source, found.Type, err)
	}
	return key, nil
}

func parseDERKey(typ string, der []byte) (crypto.Signer, error) {
	var k any
	var err error
	switch typ {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(der)
	default:
		k, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		return nil, err
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("unsupported private key type %T", k)
}

// buildCertificate pairs key with its chain: the certificate whose public
// key is key's goes first (the leaf), the rest follow in file order.
// A leaf outside its validity period is refused: starting a listener with
// it would only fail every handshake.
func buildCertificate(key crypto.Signer, chain []*x509.Certificate, now time.Time, source string) (*tls.Certificate, error) {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return nil, fmt.Errorf("%s: unsupported public key type %T", source, key.Public())
	}
	leafIdx := -1
	for i, c := range chain {
		if pub.Equal(c.PublicKey) {
			leafIdx = i
			break
		}
	}
	if leafIdx < 0 {
		return nil, fmt.Errorf("%s: no certificate in the chain matches the private key", source)
	}
	leaf := chain[leafIdx]
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("%s: certificate %q expired at %s", source, leaf.Subject, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("%s: certificate %q is not valid before %s", source, leaf.Subject, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	out := &tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for i, c := range chain {
		if i != leafIdx {
			out.Certificate = append(out.Certificate, c.Raw)
		}
	}
	return out, nil
}
