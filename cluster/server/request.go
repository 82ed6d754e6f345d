package server

import (
	"context"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire"
)

// HandlerFunc serves one decoded request. It returns the response, or nil
// when it has arranged to call rc.Respond (or rc.NoResponse) itself later.
// A returned error closes the connection, as Kafka does for requests it
// cannot make sense of; Kafka error codes go in the response instead.
type HandlerFunc func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)

// API is one row of the server's dispatch table: the versions served of
// one key, its handler, and the authorizations it declares.
type API struct {
	Key      int16
	Min, Max int16
	Handle   HandlerFunc
	Actions  func(rc *RequestContext, req kmsg.Request) []Action
}

// RequestContext is what a handler knows about the request besides its
// body: who sent it, over which listener, from where (Remote), and what they may do
// (Authorized).
type RequestContext struct {
	Header    wire.RequestHeader
	Principal Principal
	// Listener is the name of the listener the request arrived on.
	Listener string
	// Remote is the client's address.
	Remote net.Addr
	// TokenRequestsAllowed: the connection's principal was authenticated
	// (SASL, or a TLS client certificate) and not with a delegation
	// token, which Kafka requires of delegation token requests
	// (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED otherwise).
	TokenRequestsAllowed bool

	conn  *conn
	slot  *slot
	authz authzCache

	// Client quota accounting (quotas.go): the request's size, the time
	// its handler took when it answered at once, whether no client
	// quota applies to it, and the throttle its controller mutations
	// earned (quotas_mutation.go).
	requestBytes     int
	handlerTime      time.Duration
	exempt           bool
	mutationThrottle mutationThrottle

	// AfterWrite, set by a handler before it responds, gives back pooled
	// buffers the response references (slot.release): called once the
	// response is encoded onto the socket buffer, or dropped.
	AfterWrite func()
}

// Respond completes the request with resp. Only the first call counts.
// A client over its quota gets the throttle time in resp and its
// connection muted for it (quotas.go).
func (rc *RequestContext) Respond(resp kmsg.Response) {
	if t := rc.quotaThrottle(resp); t > 0 {
		rc.throttle(resp, t)
	}
	rc.slot.finishReleasing(resp, false, nil, rc.AfterWrite)
}

// NoResponse completes the request without writing anything (acks=0).
func (rc *RequestContext) NoResponse() {
	if t := rc.quotaThrottle(nil); t > 0 {
		rc.conn.mute(t)
	}
	rc.slot.finish(nil, true, nil)
}

// throttle tells the client to back off for t and mutes its connection
// for as long. A response version that predates KIP-219 (the client does
// not wait by itself) is also held back for t.
func (rc *RequestContext) throttle(resp kmsg.Response, t time.Duration) {
	ms := int32(min(t.Milliseconds(), math.MaxInt32))
	afterResponse := false
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		var cur int32
		cur, afterResponse = tr.Throttle()
		if st, ok := resp.(kmsg.SetThrottleResponse); ok {
			st.SetThrottle(max(cur, ms))
		}
	}
	if !afterResponse {
		rc.slot.notBefore = time.Now().Add(t)
	}
	rc.conn.mute(t)
}

// CloseConnection completes the request by closing the connection once
// every earlier response has been written (acks=0 produce errors).
func (rc *RequestContext) CloseConnection(err error) { rc.slot.finish(nil, false, err) }

// apiName is the request's API name, for logs and metric labels.
func (rc *RequestContext) apiName() string { return kmsg.NameForKey(rc.Header.APIKey) }

// APIVersionsResponse is this connection's ApiVersions answer in the
// request's version (SASL APIs listed only on SASL listeners).
func (rc *RequestContext) APIVersionsResponse() *kmsg.ApiVersionsResponse {
	return rc.conn.apiVersionsResponse(rc.Header.APIVersion)
}

// SASLHandshake runs a SaslHandshake request on this connection.
func (rc *RequestContext) SASLHandshake(req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, error) {
	return rc.conn.handshake(req)
}

// SASLAuthenticate runs a SaslAuthenticate request on this connection.
func (rc *RequestContext) SASLAuthenticate(ctx context.Context, req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	return rc.conn.authenticate(ctx, req)
}

// SetReplicaID notes the replica id a follower's Fetch carries, so the
// connection tells the follower's loss when it drops (Config.FollowerGone).
func (rc *RequestContext) SetReplicaID(id int32) { rc.conn.replicaID.Store(id) }

// NewRequestContext is a request context that no connection carries,
// for calling a handler directly (the handler benchmarks do): it
// authorizes with a, and must not be answered through Respond.
func NewRequestContext(listener string, a Authorizer) *RequestContext {
	return &RequestContext{Listener: listener, authz: authzCache{authorizer: a}}
}
