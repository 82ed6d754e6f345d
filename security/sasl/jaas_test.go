package sasl

import (
	"reflect"
	"testing"
)

func TestParsePlainJAAS(t *testing.T) {
	cfg := `org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin"
		password="admin-secret"
		user_admin="admin-secret"
		user_alice='alice-secret'
		user_mixed='say "hi"' 
		user_quote="a\"b\\c;d=e" // a comment
		/* another */ user_bare=bare-word.1;`
	got, err := ParsePlainJAAS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := PlainJAAS{Username: "admin", Password: "admin-secret", Users: PlainUsers{
		"admin": "admin-secret", "alice": "alice-secret", "mixed": `say "hi"`, "quote": `a"b\c;d=e`, "bare": "bare-word.1",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, cfg := range []string{
		``,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin"`,   // no ;
		`org.apache.kafka.common.security.plain.PlainLoginModule mandatory username="admin";`, // bad flag
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin;`,   // open quote
		`org.apache.kafka.common.security.plain.PlainLoginModule required username;`,          // no value
		`org.apache.kafka.common.security.plain.PlainLoginModule required username= ;`,        // empty value
		`org.apache.kafka.common.security.plain.PlainLoginModule required /* open comment ;`,  // comment
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="admin";`,  // not PLAIN
	} {
		if _, err := ParsePlainJAAS(cfg); err == nil {
			t.Errorf("accepted %q", cfg)
		}
	}
	entries, err := ParseJAAS(`a.B required x=1; c.D Optional y="2";`)
	if err != nil || len(entries) != 2 || entries[1].Flag != "optional" || entries[1].Options["y"] != "2" {
		t.Fatalf("%+v %v", entries, err)
	}
}
