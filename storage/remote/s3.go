package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithy "github.com/aws/smithy-go"
)

// S3Config is how to reach the bucket (the rsm.config.storage.* keys).
type S3Config struct {
	Endpoint        string // rsm.config.storage.s3.endpoint.url; "" is AWS's
	Bucket          string // rsm.config.storage.s3.bucket.name
	Region          string // rsm.config.storage.s3.region
	PathStyle       bool   // rsm.config.storage.s3.path.style.access.enabled
	AccessKeyID     string // rsm.config.storage.aws.access.key.id
	SecretAccessKey string // rsm.config.storage.aws.secret.access.key
	// Prefix is put before every key (rsm.config.storage.s3.prefix).
	Prefix string
}

// String names the bucket without the credentials, for logs.
func (c S3Config) String() string {
	return fmt.Sprintf("s3://%s/%s (endpoint %q, region %q)", c.Bucket, c.Prefix, c.Endpoint, c.Region)
}

// S3 is Storage over an S3-compatible bucket.
type S3 struct {
	cfg    S3Config
	client *s3.Client
	tr     *http.Transport
}

// NewS3 returns a Storage over cfg's bucket. It does not contact the
// store.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("remote: no bucket (rsm.config.storage.s3.bucket.name)")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	opts := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: cfg.PathStyle,
		HTTPClient:   &http.Client{Transport: tr},
		// Retries are the caller's (with its own backoff and deadline).
		RetryMaxAttempts: 1,
		// Checksums only where the API demands them: S3-compatible
		// stores differ in their support of the newer trailing ones.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	if cfg.AccessKeyID != "" {
		creds := aws.Credentials{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey}
		opts.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
	} else {
		opts.Credentials = aws.AnonymousCredentials{}
	}
	return &S3{cfg: cfg, client: s3.New(opts), tr: tr}, nil
}

// Close drops the idle connections.
func (s *S3) Close() { s.tr.CloseIdleConnections() }

func (s *S3) key(seg Segment, f File) string { return s.cfg.Prefix + Key(seg, f) }

// CopySegment implements Storage: one PutObject per file, the .log last.
func (s *S3) CopySegment(ctx context.Context, seg Segment, files Files) error {
	for f := File(0); f < numFiles; f++ {
		var body io.ReadSeeker
		var size int64
		if f == FileLeaderEpochs {
			body, size = bytes.NewReader(files.LeaderEpochs), int64(len(files.LeaderEpochs))
		} else {
			p := files.path(f)
			if p == "" {
				continue
			}
			fh, err := os.Open(p)
			if err != nil {
				return fmt.Errorf("remote: copy %s: %w", s.key(seg, f), err)
			}
			st, err := fh.Stat()
			if err != nil {
				fh.Close()
				return fmt.Errorf("remote: copy %s: %w", s.key(seg, f), err)
			}
			if f == FileLog && st.Size() != seg.Size {
				fh.Close()
				return fmt.Errorf("remote: copy %s: the file has %d bytes, the segment %d", s.key(seg, f), st.Size(), seg.Size)
			}
			body, size = fh, st.Size()
			defer fh.Close()
		}
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.cfg.Bucket),
			Key:           aws.String(s.key(seg, f)),
			Body:          body,
			ContentLength: aws.Int64(size),
		})
		if err != nil {
			return fmt.Errorf("remote: put %s: %w", s.key(seg, f), err)
		}
	}
	return nil
}

// Fetch implements Storage with a ranged GetObject.
func (s *S3) Fetch(ctx context.Context, seg Segment, f File, start, end int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(s.key(seg, f))}
	switch {
	case end >= 0 && end <= start:
		return io.NopCloser(bytes.NewReader(nil)), nil
	case end >= 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", start, end-1))
	case start > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", start))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, s.key(seg, f))
		}
		return nil, fmt.Errorf("remote: get %s: %w", s.key(seg, f), err)
	}
	return out.Body, nil
}

// DeleteSegment implements Storage.
func (s *S3) DeleteSegment(ctx context.Context, seg Segment) error {
	var errs []error
	for f := File(0); f < numFiles; f++ {
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(s.key(seg, f))})
		if err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("remote: delete %s: %w", s.key(seg, f), err))
		}
	}
	return errors.Join(errs...)
}

// List returns the keys (without the store's prefix) under prefix, for
// finding orphans.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(s.cfg.Prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("remote: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key)[len(s.cfg.Prefix):])
		}
	}
	return keys, nil
}

// Ping checks that the bucket is reachable, within timeout.
func (s *S3) Ping(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.cfg.Bucket)}); err != nil {
		return fmt.Errorf("remote: bucket %s: %w", s.cfg.Bucket, err)
	}
	return nil
}

func notFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

// String names the store without its credentials.
func (s *S3) String() string { return s.cfg.String() }
