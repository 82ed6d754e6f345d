package admincli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// users describe|alter|delete: the SCRAM credentials of
// kafka-configs.sh --entity-type users (--describe, --alter
// --add-config/--delete-config 'SCRAM-SHA-256=[...]') over
// DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554).
// Passwords come from a file or stdin, never a flag: a flag is in the
// shell history and in ps.

// stdin is where --password-file - reads; tests replace it.
var stdin io.Reader = os.Stdin

func parseScramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism: %q is not SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

type userCred struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func usersDescribe() adminCommand {
	var users commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.Var(&users, "user", "a user to describe (repeatable; default every user with a credential)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			described, err := a.adm.DescribeUserSCRAMs(ctx, users...)
			if err != nil {
				return err
			}
			type user struct {
				User        string     `json:"user"`
				Credentials []userCred `json:"credentials"`
				Error       string     `json:"error,omitempty"`
			}
			out := []user{}
			var rows [][]string
			var errs []error
			for _, d := range described.Sorted() {
				u := user{User: d.User, Credentials: []userCred{}, Error: errText(d.Err, d.ErrMessage)}
				if d.Err != nil {
					errs = append(errs, fmt.Errorf("user %s: %w", d.User, d.Err))
					rows = append(rows, []string{d.User, "-", "-", u.Error})
				}
				for _, c := range d.CredInfos {
					u.Credentials = append(u.Credentials, userCred{c.Mechanism.String(), c.Iterations})
					rows = append(rows, []string{d.User, c.Mechanism.String(), strconv.Itoa(int(c.Iterations)), ""})
				}
				out = append(out, u)
			}
			if err := a.emit(out, []string{"USER", "MECHANISM", "ITERATIONS", "ERROR"}, rows); err != nil {
				return err
			}
			return firstErr("users", errs)
		},
	}
}

// readPassword reads the first line of path ("-": stdin), without its
// line ending. Errors never quote the content.
func readPassword(path string) (string, error) {
	var r io.Reader
	if path == "-" {
		r = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", usagef("--password-file: the first line (the password) is empty")
	}
	return line, nil
}

// emitAltered prints the result of AlterUserSCRAMs for one user.
func (a *adminEnv) emitAltered(res kadm.AlteredUserSCRAMs, user, mech, action string) error {
	r, ok := res[user]
	if !ok {
		return fmt.Errorf("user %s: missing from the response", user)
	}
	out := struct {
		User      string `json:"user"`
		Mechanism string `json:"mechanism"`
		Action    string `json:"action"`
		Error     string `json:"error,omitempty"`
	}{user, mech, action, errText(r.Err, r.ErrMessage)}
	status := "OK"
	if r.Err != nil {
		status = out.Error
	}
	if err := a.emit(out, []string{"USER", "MECHANISM", "ACTION", "RESULT"}, [][]string{{user, mech, action, status}}); err != nil {
		return err
	}
	if r.Err != nil {
		return fmt.Errorf("user %s: %w", user, r.Err)
	}
	return nil
}

func usersAlter() adminCommand {
	var user, mech, pwFile string
	var iterations int
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&user, "user", "", "the user")
			fs.StringVar(&mech, "mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512")
			fs.IntVar(&iterations, "iterations", 8192, "PBKDF2 iterations, 4096 to 16384")
			fs.StringVar(&pwFile, "password-file", "", "a file whose first line is the password, or - for stdin")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if user == "" {
				return usagef("--user is required")
			}
			m, err := parseScramMechanism(mech)
			if err != nil {
				return err
			}
			if iterations < 4096 || iterations > 16384 {
				return usagef("--iterations: %d is outside 4096 to 16384", iterations)
			}
			if pwFile == "" {
				return usagef("--password-file is required (a file, or - for stdin; never a flag)")
			}
			pw, err := readPassword(pwFile)
			if err != nil {
				return err
			}
			res, err := a.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: int32(iterations), Password: pw}})
			if err != nil {
				return err
			}
			return a.emitAltered(res, user, m.String(), "upserted")
		},
	}
}

func usersDelete() adminCommand {
	var user, mech string
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&user, "user", "", "the user")
			fs.StringVar(&mech, "mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if user == "" {
				return usagef("--user is required")
			}
			m, err := parseScramMechanism(mech)
			if err != nil {
				return err
			}
			res, err := a.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: m}}, nil)
			if err != nil {
				return err
			}
			return a.emitAltered(res, user, m.String(), "deleted")
		},
	}
}
