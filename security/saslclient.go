package security

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/sasl"
)

// RoundTrip sends one request on a connection and returns its response;
// the inter-broker connection layer supplies it.
type RoundTrip func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

// maxSASLRounds bounds a misbehaving server's exchange; SCRAM needs 2.
const maxSASLRounds = 10

// AuthenticateClient runs the client side of Kafka SASL on a fresh
// connection to another broker: SaslHandshake v1 then SaslAuthenticate
// requests until the session is done. Errors carry the broker's Kafka
// error (kerr) when it sent one.
func AuthenticateClient(ctx context.Context, rt RoundTrip, session sasl.ClientSession) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = session.Mechanism()
	resp, err := rt(ctx, hs)
	if err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	hsResp, ok := resp.(*kmsg.SASLHandshakeResponse)
	if !ok {
		return fmt.Errorf("SaslHandshake: unexpected response %T", resp)
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("SaslHandshake %s (broker offers %v): %w", session.Mechanism(), hsResp.SupportedMechanisms, err)
	}
	msg, err := session.Start()
	if err != nil {
		return err
	}
	for range maxSASLRounds {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 1
		req.SASLAuthBytes = msg
		resp, err := rt(ctx, req)
		if err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		authResp, ok := resp.(*kmsg.SASLAuthenticateResponse)
		if !ok {
			return fmt.Errorf("SaslAuthenticate: unexpected response %T", resp)
		}
		if err := kerr.ErrorForCode(authResp.ErrorCode); err != nil {
			if authResp.ErrorMessage != nil {
				return fmt.Errorf("SaslAuthenticate %s: %w: %s", session.Mechanism(), err, *authResp.ErrorMessage)
			}
			return fmt.Errorf("SaslAuthenticate %s: %w", session.Mechanism(), err)
		}
		next, done, err := session.Step(authResp.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		msg = next
	}
	return fmt.Errorf("SASL %s: no result after %d rounds", session.Mechanism(), maxSASLRounds)
}
