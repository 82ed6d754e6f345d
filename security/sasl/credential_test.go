package sasl

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestParseAddScram(t *testing.T) {
	salt := []byte("1lv4pdnw4fwq7notcxm0yy1k7q")
	saltB64 := base64.StdEncoding.EncodeToString(salt)
	sp, err := SHA512.SaltedPassword("alice-secret", salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	fromPassword, err := DeriveScramCredential(SHA512, "alice-secret", salt, 8192)
	if err != nil {
		t.Fatal(err)
	}

	user, c, err := ParseAddScram(`SCRAM-SHA-512=[name=alice,iterations=8192,salt="` + saltB64 + `",saltedpassword="` + base64.StdEncoding.EncodeToString(sp) + `"]`)
	if err != nil {
		t.Fatal(err)
	}
	if user != "alice" || c.Iterations != 8192 || !bytes.Equal(c.Salt, salt) ||
		!bytes.Equal(c.StoredKey, fromPassword.StoredKey) || !bytes.Equal(c.ServerKey, fromPassword.ServerKey) {
		t.Fatalf("saltedpassword form disagrees with password form: %+v", c)
	}

	user, c, err = ParseAddScram(`SCRAM-SHA-256=[name=admin,password=admin-secret]`)
	if err != nil || user != "admin" || c.Iterations != 4096 || c.Mechanism.Type != 1 || len(c.Salt) == 0 || len(c.StoredKey) != 32 {
		t.Fatalf("%q %+v %v", user, c, err)
	}
	// A random salt each time.
	_, c2, _ := ParseAddScram(`SCRAM-SHA-256=[name=admin,password=admin-secret]`)
	if bytes.Equal(c.Salt, c2.Salt) {
		t.Fatal("two credentials share a salt")
	}

	for _, bad := range []struct{ arg, msg string }{
		{`SCRAM-SHA-256`, "equals"},
		{`SCRAM-SHA-1=[name=a,password=b]`, "not supported"},
		{`SCRAM-SHA-256=name=a,password=b`, "[ ]"},
		{`SCRAM-SHA-256=[password=b]`, "'name'"},
		{`SCRAM-SHA-256=[name=a]`, "'password' or 'saltedpassword'"},
		{`SCRAM-SHA-256=[name=a,saltedpassword="AAAA"]`, "'salt'"},
		{`SCRAM-SHA-256=[name=a,password=b,iterations=100]`, ">= 4096"},
		{`SCRAM-SHA-256=[name=a,password=b,iterations=20000]`, "<= 16384"},
		{`SCRAM-SHA-256=[name=a,password=b,iterations=x]`, "iterations"},
		{`SCRAM-SHA-256=[name=a,password=b,salt="!!"]`, "salt"},
		{`SCRAM-SHA-256=[name=a,password=b,colour=red]`, "colour"},
		{`SCRAM-SHA-256=[name=a,passwordb]`, "equals sign"},
	} {
		if _, _, err := ParseAddScram(bad.arg); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: err=%v, want %q", bad.arg, err, bad.msg)
		}
	}
}
