package listener

import (
	"bytes"
	"testing"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, &Request{Op: "ReadIndex"}); err != nil {
		t.Fatal(err)
	}
	var req Request
	if err := ReadFrame(&buf, &req); err != nil || req.Op != "ReadIndex" {
		t.Fatalf("%+v %v", req, err)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	if err := ReadFrame(bytes.NewReader(huge), &req); err == nil {
		t.Fatal("oversize frame accepted")
	}
	if err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 9, '{'}), &req); err == nil {
		t.Fatal("short frame accepted")
	}
}
