package security

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"testing"
)

// The example of Kafka's security documentation (ssl.principal.mapping.rules).
func TestPrincipalMappingDocExample(t *testing.T) {
	m, err := ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dn, want string }{
		{"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"},
		{"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"},
		{"O=Unknown,cn=Mixed.Case", "mixed.case"},
		{"O=Unknown,C=US", "O=Unknown,C=US"},
	} {
		if got, err := m.Name(tc.dn); err != nil || got != tc.want {
			t.Errorf("%s -> %q (%v), want %q", tc.dn, got, err, tc.want)
		}
	}
}

// Kafka's SslPrincipalMapperTest cases.
func TestPrincipalMappingRules(t *testing.T) {
	m, err := ParsePrincipalMappingRules(
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
			"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
			"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
			"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
			"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("%s -> %q, %v; want %q", dn, got, err, want)
		}
	}

	m, err = ParsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); got != `Tkac\, Adam` {
		t.Errorf("escaped comma: %q", got)
	}

	// Replacement details: a missing group stays literal, escapes.
	m, _ = ParsePrincipalMappingRules(`RULE:^CN=(\w+),O=(\w+)$/$2\/$1-$3/`)
	if got, _ := m.Name("CN=bob,O=acme"); got != "acme/bob-$3" {
		t.Errorf("replacement: %q", got)
	}
	m, _ = ParsePrincipalMappingRules(`RULE:^CN=(\w+)$/$1/`)
	if _, err := m.Name("O=acme"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("no rule matched, err=%v", err)
	}
	if m, _ := ParsePrincipalMappingRules(""); m.String() != "[DEFAULT]" {
		t.Errorf("empty rules are %s, want DEFAULT", m)
	}
}

func TestPrincipalRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{"DEFAULT", "[DEFAULT]"},
		{"RULE://", "[RULE:/]"},
		{"RULE:/.*/", "[RULE:/.*]"},
		{"RULE:/.*/L", "[RULE:/.*/L]"},
		{"RULE://,DEFAULT", "[RULE:/, DEFAULT]"},
		{"  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"},
		{"  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"},
		{"  RULE:  /     /U   ,DEFAULT  ", "[RULE:  /     /U, DEFAULT]"},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"},
		{",   , , ,      , , ,   ", "[]"},
		{",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"},
		{",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"},
		{"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", "[RULE:   /  /U, DEFAULT]"},
		{`RULE:\/\\\(\)\n\t/\/\//`, `[RULE:\/\\\(\)\n\t/\/\/]`},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, `[RULE:\**\/+/*/L, RULE:\/*\**/**]`},
		{`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if tc.rules == ",   , , ,      , , ,   " {
			// Only empty rules: none at all, as in Kafka (a blank value,
			// by contrast, is the unset property and means DEFAULT).
			if err != nil || len(m.rules) != 0 {
				t.Errorf("%q: %v %v", tc.rules, m, err)
			}
			continue
		}
		if err != nil || m.String() != tc.want {
			t.Errorf("%q -> %v (%v), want %s", tc.rules, m, err, tc.want)
		}
	}
	for _, bad := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(?=x)$/$1/", // Java look-ahead: not RE2
	} {
		if _, err := ParsePrincipalMappingRules(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func rawName(t *testing.T, rdns ...[]pkix.AttributeTypeAndValue) []byte {
	t.Helper()
	seq := pkix.RDNSequence{}
	for _, r := range rdns {
		seq = append(seq, pkix.RelativeDistinguishedNameSET(r))
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func atv(oid asn1.ObjectIdentifier, v any) []pkix.AttributeTypeAndValue {
	return []pkix.AttributeTypeAndValue{{Type: oid, Value: v}}
}

var (
	oidCN    = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidC     = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidO     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU    = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidDC    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidEmail = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidSN    = asn1.ObjectIdentifier{2, 5, 4, 5}
)

// TestRFC2253Name checks the DN text against what Java's
// X500Principal.getName() prints for the same encodings.
func TestRFC2253Name(t *testing.T) {
	ia5 := func(s string) asn1.RawValue { return asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(s)} }
	cases := []struct {
		name string
		der  []byte
		want string
	}{
		{"order reversed", rawName(t, atv(oidC, "US"), atv(oidO, "acme"), atv(oidOU, "eng"), atv(oidCN, "alice")),
			"CN=alice,OU=eng,O=acme,C=US"},
		{"special characters", rawName(t, atv(oidCN, `a,b+c=d<e>f#g;h"i\j`)),
			`CN=a\,b\+c\=d\<e\>f\#g\;h\"i\\j`},
		{"leading and trailing spaces", rawName(t, atv(oidCN, "  bob ")), `CN=\ \ bob\ `},
		{"email and serial as OID and hex", rawName(t, atv(oidEmail, ia5("a@b.c")), atv(oidSN, "42"), atv(oidCN, "x")),
			"CN=x,2.5.4.5=#13023432,1.2.840.113549.1.9.1=#16056140622e63"},
		{"DC keyword", rawName(t, atv(oidDC, ia5("com")), atv(oidDC, ia5("example"))), "DC=example,DC=com"},
		{"multi-valued RDN", rawName(t, []pkix.AttributeTypeAndValue{{Type: oidCN, Value: "a"}, {Type: oidOU, Value: "b"}}),
			"CN=a+OU=b"},
		{"UTF-8", rawName(t, atv(oidCN, "zoë")), "CN=zoë"},
		{"empty", rawName(t), ""},
	}
	for _, tc := range cases {
		got, err := RFC2253Name(tc.der)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := RFC2253Name([]byte{0x30, 0x05}); err == nil {
		t.Error("truncated subject accepted")
	}
}

func TestCertificatePrincipal(t *testing.T) {
	p := newTestPKI(t)
	cert, _, err := p.ca.Issue(CertRequest{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}, Country: []string{"US"}}, ClientAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	chain := []*x509.Certificate{cert, p.ca.Cert}
	if got, _ := CertificatePrincipal(chain, nil); got.String() != "User:CN=alice,OU=eng,O=acme,C=US" {
		t.Errorf("no rules: %s", got)
	}
	rules, _ := ParsePrincipalMappingRules("RULE:^CN=([^,]+),OU=eng,.*$/$1/U,DEFAULT")
	if got, _ := CertificatePrincipal(chain, rules); got != User("ALICE") {
		t.Errorf("rules: %s", got)
	}
	if got, _ := CertificatePrincipal(nil, rules); got != Anonymous || got.String() != "User:ANONYMOUS" {
		t.Errorf("no certificate: %s", got)
	}
}
