package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBootstrapScram(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scram")
	if err := os.WriteFile(file, []byte("# brokers\nSCRAM-SHA-256=[name=kb,password=kb-secret]\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := bootstrapScram([]string{"SCRAM-SHA-512=[name=admin,password=admin-secret]"}, []string{file})
	if err != nil {
		t.Fatal(err)
	}
	if len(creds) != 2 || creds[0].User != "admin" || creds[0].Credential.Mechanism.Name() != "SCRAM-SHA-512" ||
		creds[1].User != "kb" || creds[1].Credential.Mechanism.Name() != "SCRAM-SHA-256" {
		t.Fatalf("creds = %+v", creds)
	}
	_, err = bootstrapScram([]string{"SCRAM-SHA-1=[name=admin,password=hunter2]"}, nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v, want an error without the password", err)
	}
}
