package main

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kbroker/kbroker/security"
)

const tlsUsage = `usage: kbroker tls init --dir DIR --hosts kb1,kb2,localhost [--days N] [--client admin] [--san-localhost] [--force]

Writes a private CA and PEM key material for a test or small cluster:
  ca.pem, ca-key.pem               the CA (ssl.truststore.location = ca.pem)
  <host>.pem                       key + certificate chain (ssl.keystore.location)
  <host>-key.pem, <host>-cert.pem  the same key and chain as separate files
  <client>.pem, ...                a client certificate (CN=<client>) for mTLS
Each host certificate names the host (a DNS or IP SAN); "localhost" also
gets 127.0.0.1 and ::1, and --san-localhost adds those to every host.
Keys are written 0600, certificates 0644. Existing files are kept unless
--force is given.`

// tlsCmd dispatches "kbroker tls <subcommand>".
func tlsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprintln(stderr, tlsUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	return tlsInitCmd(args[1:], stdout, stderr)
}

type tlsInitOptions struct {
	dir          string
	hosts        []string
	days         int
	client       string
	sanLocalhost bool
	force        bool
}

func tlsInitCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("tls init", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var o tlsInitOptions
	fset.StringVar(&o.dir, "dir", "", "directory to write into (created if missing)")
	hosts := fset.String("hosts", "", "comma-separated broker host names or IPs, one certificate each")
	fset.IntVar(&o.days, "days", 365, "validity of the CA and every certificate, in days")
	fset.StringVar(&o.client, "client", "admin", "common name of a client certificate to issue (empty: none)")
	fset.BoolVar(&o.sanLocalhost, "san-localhost", false, "add localhost, 127.0.0.1 and ::1 to every host certificate")
	fset.BoolVar(&o.force, "force", false, "overwrite existing files")
	fset.Usage = func() {
		fmt.Fprintln(stderr, tlsUsage)
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "kbroker tls init: unexpected argument %q\n", fset.Arg(0))
		return 2
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			o.hosts = append(o.hosts, h)
		}
	}
	written, err := tlsInit(o)
	for _, w := range written {
		fmt.Fprintf(stdout, "wrote %s (%s)\n", w.path, w.what)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kbroker tls init: %v\n", err)
		return 1
	}
	if len(o.hosts) > 0 {
		h := o.hosts[0]
		fmt.Fprintf(stdout, "\nBroker properties for %s:\n  ssl.keystore.type=PEM\n  ssl.keystore.location=%s\n  ssl.truststore.type=PEM\n  ssl.truststore.location=%s\n",
			h, filepath.Join(o.dir, h+".pem"), filepath.Join(o.dir, "ca.pem"))
	}
	return 0
}

type writtenFile struct{ path, what string }

// tlsInit checks the options and writes every file; it returns the files
// written so far even on error.
func tlsInit(o tlsInitOptions) ([]writtenFile, error) {
	if o.dir == "" {
		return nil, errors.New("--dir is required")
	}
	if len(o.hosts) == 0 {
		return nil, errors.New("--hosts is required")
	}
	if o.days < 1 {
		return nil, fmt.Errorf("--days must be at least 1, got %d", o.days)
	}
	names := map[string]bool{"ca": true}
	for _, h := range append(append([]string(nil), o.hosts...), o.client) {
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, `/\`) || h == "." || h == ".." {
			return nil, fmt.Errorf("%q cannot be used as a file name", h)
		}
		if names[h] {
			return nil, fmt.Errorf("name %q is used twice (hosts, --client and the CA need distinct names)", h)
		}
		names[h] = true
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, err
	}
	// Refuse before writing anything, so a second run cannot leave a new
	// CA next to certificates signed by the old one.
	if !o.force {
		for n := range names {
			for _, suffix := range []string{".pem", "-key.pem", "-cert.pem"} {
				p := filepath.Join(o.dir, n+suffix)
				if _, err := os.Stat(p); err == nil {
					return nil, fmt.Errorf("%s exists; use --force to overwrite", p)
				} else if !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
			}
		}
	}

	validFor := time.Duration(o.days) * 24 * time.Hour
	ca, err := security.NewCA(pkix.Name{CommonName: "kbroker CA", Organization: []string{"kbroker"}}, validFor)
	if err != nil {
		return nil, err
	}
	var written []writtenFile
	write := func(name string, data []byte, perm fs.FileMode, what string) error {
		p := filepath.Join(o.dir, name)
		if err := writeFileMode(p, data, perm); err != nil {
			return err
		}
		written = append(written, writtenFile{p, what})
		return nil
	}
	caKey, err := security.KeyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := write("ca.pem", security.CertPEM(ca.Cert), 0o644, "CA certificate, ssl.truststore.location"); err != nil {
		return written, err
	}
	if err := write("ca-key.pem", caKey, 0o600, "CA private key, keep it offline"); err != nil {
		return written, err
	}

	issue := func(name string, req security.CertRequest, what string) error {
		now := time.Now()
		req.NotBefore, req.NotAfter = now.Add(-time.Hour), now.Add(validFor)
		cert, key, err := ca.Issue(req)
		if err != nil {
			return err
		}
		return writeKeyAndChain(write, name, cert, ca.Cert, key, what)
	}
	for _, h := range o.hosts {
		req := security.CertRequest{Subject: pkix.Name{CommonName: h}, ServerAuth: true, ClientAuth: true}
		addSAN(&req, h)
		if o.sanLocalhost || h == "localhost" {
			addSAN(&req, "localhost")
			req.IPs = appendIP(req.IPs, net.ParseIP("127.0.0.1"), net.IPv6loopback)
		}
		if err := issue(h, req, "broker "+h); err != nil {
			return written, err
		}
	}
	if o.client != "" {
		req := security.CertRequest{Subject: pkix.Name{CommonName: o.client}, ClientAuth: true}
		if err := issue(o.client, req, "client User:CN="+o.client); err != nil {
			return written, err
		}
	}
	return written, nil
}

func writeKeyAndChain(write func(string, []byte, fs.FileMode, string) error, name string, cert, caCert *x509.Certificate, key crypto.Signer, what string) error {
	keyPEM, err := security.KeyPEM(key)
	if err != nil {
		return err
	}
	chain := security.CertPEM(cert, caCert)
	if err := write(name+".pem", append(append([]byte(nil), keyPEM...), chain...), 0o600, what+": key and chain, ssl.keystore.location"); err != nil {
		return err
	}
	if err := write(name+"-key.pem", keyPEM, 0o600, what+": key, ssl.keystore.key"); err != nil {
		return err
	}
	return write(name+"-cert.pem", chain, 0o644, what+": chain, ssl.keystore.certificate.chain")
}

func addSAN(req *security.CertRequest, host string) {
	if ip := net.ParseIP(host); ip != nil {
		req.IPs = appendIP(req.IPs, ip)
		return
	}
	for _, d := range req.DNSNames {
		if d == host {
			return
		}
	}
	req.DNSNames = append(req.DNSNames, host)
}

func appendIP(ips []net.IP, add ...net.IP) []net.IP {
next:
	for _, a := range add {
		for _, ip := range ips {
			if ip.Equal(a) {
				continue next
			}
		}
		ips = append(ips, a)
	}
	return ips
}

// writeFileMode writes data with exactly perm, whatever the umask or a
// previous file's mode: a key must never end up group-readable.
func writeFileMode(path string, data []byte, perm fs.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
