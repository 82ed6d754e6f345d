package security

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Principal is Kafka's KafkaPrincipal: a type ("User") and a name.
type Principal struct {
	Type, Name string
}

// PrincipalTypeUser is the only principal type Kafka's default builder
// produces.
const PrincipalTypeUser = "User"

// Anonymous is the principal of a connection with no authentication:
// PLAINTEXT, or SSL without a client certificate.
var Anonymous = Principal{Type: PrincipalTypeUser, Name: "ANONYMOUS"}

// User returns the principal User:<name>.
func User(name string) Principal { return Principal{Type: PrincipalTypeUser, Name: name} }

// String is Kafka's form, "User:alice", as written in ACLs.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// CertificatePrincipal derives a TLS client's principal as Kafka's default
// principal builder does: the subject DN of its certificate in RFC 2253
// form, rewritten by ssl.principal.mapping.rules. No certificate gives
// User:ANONYMOUS.
func CertificatePrincipal(peer []*x509.Certificate, rules *PrincipalMapper) (Principal, error) {
	if len(peer) == 0 {
		return Anonymous, nil
	}
	dn, err := RFC2253Name(peer[0].RawSubject)
	if err != nil {
		return Principal{}, err
	}
	if rules == nil {
		return User(dn), nil
	}
	name, err := rules.Name(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}

// rfc2253Keywords are the attribute names Java's X500Principal.getName()
// writes; any other attribute comes out as its OID and a #hex value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// RFC2253Name formats a DER-encoded X.500 name (a certificate's
// RawSubject) exactly as Java's X500Principal.getName() does, which is
// what Kafka matches principal mapping rules and ACLs against: RDNs from
// last to first ("CN=alice,OU=eng,O=acme,C=US"), multi-valued RDNs joined
// by '+', special characters escaped with '\'.
func RFC2253Name(rawSubject []byte) (string, error) {
	var rdns []asn1.RawValue
	if rest, err := asn1.Unmarshal(rawSubject, &rdns); err != nil {
		return "", fmt.Errorf("malformed certificate subject: %w", err)
	} else if len(rest) != 0 {
		return "", fmt.Errorf("malformed certificate subject: %d bytes after it", len(rest))
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		var atvs []attributeTypeAndValue
		if _, err := asn1.UnmarshalWithParams(rdns[i].FullBytes, &atvs, "set"); err != nil {
			return "", fmt.Errorf("malformed certificate subject RDN: %w", err)
		}
		avas := make([]string, 0, len(atvs))
		for _, atv := range atvs {
			avas = append(avas, formatAVA(atv))
		}
		parts = append(parts, strings.Join(avas, "+"))
	}
	return strings.Join(parts, ","), nil
}

func formatAVA(atv attributeTypeAndValue) string {
	keyword, known := rfc2253Keywords[atv.Type.String()]
	value, isString := derString(atv.Value)
	if !known || !isString {
		// Java writes unknown attributes (e.g. emailAddress) and
		// non-string values as OID=#<hex of the DER value>.
		if !known {
			keyword = atv.Type.String()
		}
		return fmt.Sprintf("%s=#%x", keyword, atv.Value.FullBytes)
	}
	return keyword + "=" + escapeRFC2253(value)
}

// derString decodes the string types Java's RFC 2253 output prints as text.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String, asn1.TagUTF8String, asn1.TagGeneralString:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeRFC2253 escapes as Java's AVA.toRFC2253String: a backslash before
// each of ,=+<>#;"\ and before leading and trailing spaces; NUL as \00.
func escapeRFC2253(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	isSpace := func(c byte) bool { return c == ' ' || c == '\r' }
	lead, trail := 0, len(out)
	for lead < len(out) && isSpace(out[lead]) {
		lead++
	}
	for trail > lead && isSpace(out[trail-1]) {
		trail--
	}
	if lead == 0 && trail == len(out) {
		return out
	}
	var e strings.Builder
	for i := 0; i < len(out); i++ {
		if i < lead || i >= trail {
			e.WriteByte('\\')
		}
		e.WriteByte(out[i])
	}
	return e.String()
}
