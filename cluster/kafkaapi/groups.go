package kafkaapi

import (
	"errors"
	"net"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
)

// clientHost is the member's host as Kafka reports it ("/1.2.3.4").
func clientHost(rc *server.RequestContext) string {
	if rc.Remote == nil {
		return ""
	}
	s := rc.Remote.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return "/" + h
	}
	return "/" + s
}

// groupErrorMessage is the message sent with a group request's error:
// the explanation of a group.Error, else errcode.Message's.
func groupErrorMessage(err error) *string {
	if ge, ok := errors.AsType[*group.Error](err); ok {
		return &ge.Msg
	}
	return errcode.Message(err)
}
