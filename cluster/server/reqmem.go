package server

import "context"

// acquireRequestMem takes a frame's bytes from queued.max.request.bytes,
// waiting (the connection reads nothing meanwhile) until enough requests
// have been answered. A frame larger than the whole bound takes all of it,
// so it waits until it is alone rather than forever. It returns the
// amount to give back with releaseRequestMem.
func (s *Server) acquireRequestMem(ctx context.Context, size int32) (int64, error) {
	n := int64(size)
	if s.requestMem == nil || n == 0 {
		return 0, nil
	}
	n = min(n, s.cfg.queuedMaxRequestBytes)
	if !s.requestMem.TryAcquire(n) {
		s.metrics.memWaiting.Inc()
		err := s.requestMem.Acquire(ctx, n)
		s.metrics.memWaiting.Dec()
		if err != nil {
			return 0, err
		}
	}
	s.metrics.queuedBytes.Add(float64(n))
	return n, nil
}

func (s *Server) releaseRequestMem(n int64) {
	if n == 0 {
		return
	}
	s.requestMem.Release(n)
	s.metrics.queuedBytes.Sub(float64(n))
}
