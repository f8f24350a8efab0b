package certs

import (
	"fmt"
	"strings"
	"time"

	acmev1 "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Observed is what the certificates controller gathered about one cluster's certificate.
type Observed struct {
	// Names the Certificate asks for (the names granted to it): the issued key pair must name
	// exactly these.
	Names []string
	// Queued: the cluster's names changed (or it has no certificate yet) and the new order waits
	// for the seed's ACME budget.
	Queued *Queued
	// LeftOut are the shards whose names do not fit in one certificate (MaxNames).
	LeftOut []string
	// Certificate as cert-manager reports it; nil before it exists.
	Certificate *cmapi.Certificate
	// IssuerFound: the issuer the Certificate names exists (unknown for external groups: true).
	IssuerFound bool
	// IssuerReady is the issuer's Ready condition, if it has one.
	IssuerReady *cmapi.IssuerCondition
	// Request is the newest CertificateRequest for the Certificate, if any.
	Request *cmapi.CertificateRequest
	// Order is the ACME Order of that request, if any; Challenges are its challenges.
	Order      *acmev1.Order
	Challenges []acmev1.Challenge
	// KeyPair is what the issued Secret holds (nil: no Secret yet, or KeyPairErr says why not).
	KeyPair    *KeyPair
	KeyPairErr error
	Now        time.Time
}

// Queued is a new order waiting for the seed's ACME budget.
type Queued struct {
	// At is when it may be placed (Schedule).
	At time.Time
	// PerWeek is the seed's budget of new orders per OrderWindow.
	PerWeek int
}

// maxMessage bounds what is copied from cert-manager and ACME servers into a condition.
const maxMessage = 400

// Decide is CertificateReady for what was observed, and the certificate status to report.
//
// True needs all of: cert-manager calls the Certificate Ready, the Secret's key pair is valid now
// and names exactly the names asked for, and no new order is queued. Issuance problems win over
// an older valid certificate (the routers keep serving it, and the message says until when), so
// a failing issuer is never silent. A key pair naming anything else is refused with a fixed
// message (what it names is not repeated: it is not the cluster's).
func Decide(o Observed) metav1.Condition {
	cond := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionCertificateReady, Status: status, Reason: reason, Message: bound(msg + o.serving())}
	}
	if !o.IssuerFound {
		return cond(metav1.ConditionFalse, v1alpha1.ReasonIssuerNotFound, "the issuer the profile names does not exist (an Issuer must be in Shardgate's certificate namespace)")
	}
	if reason, msg, failed := o.failure(); failed {
		return cond(metav1.ConditionFalse, reason, msg)
	}
	kp := o.KeyPair
	switch {
	case o.KeyPairErr != nil:
		return cond(metav1.ConditionFalse, v1alpha1.ReasonCertificateInvalid, "the issued Secret: "+o.KeyPairErr.Error())
	case kp != nil && len(kp.Beyond(o.Names)) > 0:
		return metav1.Condition{Type: v1alpha1.ConditionCertificateReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonCertificateUnexpectedNames, Message: fmt.Sprintf("the issued certificate is valid for %d name(s) "+
				"the cluster's Certificate does not ask for: it is not handed to the routers%s", len(kp.Beyond(o.Names)), o.progress())}
	case o.Queued != nil:
		return cond(metav1.ConditionFalse, v1alpha1.ReasonIssuanceQueued, o.Queued.message(o.Certificate == nil))
	case kp != nil && !o.Now.Before(kp.Leaf.NotAfter):
		return cond(metav1.ConditionFalse, v1alpha1.ReasonCertificateExpired, "the certificate expired at "+kp.Leaf.NotAfter.UTC().Format(time.RFC3339)+o.progress())
	case kp != nil && len(kp.Uncovered(o.Names)) > 0:
		return cond(metav1.ConditionFalse, v1alpha1.ReasonCertificateMismatched, "the certificate does not cover "+strings.Join(kp.Uncovered(o.Names), ", ")+" yet"+o.progress())
	case kp != nil && kp.ValidAt(o.Now) && certificateReady(o.Certificate):
		msg := fmt.Sprintf("valid until %s", kp.Leaf.NotAfter.UTC().Format(time.RFC3339))
		if c := o.Certificate; c != nil && c.Status.RenewalTime != nil {
			msg += ", renewal at " + c.Status.RenewalTime.UTC().Format(time.RFC3339)
		}
		if len(o.LeftOut) > 0 {
			// The cluster is served; the shards past the limit are not, and say so.
			return metav1.Condition{Type: v1alpha1.ConditionCertificateReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNamesLeftOut,
				Message: bound(msg + "; " + LeftOutMessage(o.LeftOut))}
		}
		return metav1.Condition{Type: v1alpha1.ConditionCertificateReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCertificateIssued, Message: msg}
	}
	if c := o.IssuerReady; c != nil && c.Status != cmmeta.ConditionTrue {
		return cond(metav1.ConditionFalse, v1alpha1.ReasonIssuerNotReady, "issuer not ready: "+c.Reason+": "+c.Message)
	}
	return cond(metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing, "issuing"+o.progress())
}

func (q *Queued) message(first bool) string {
	what := "the certificate for the cluster's new names"
	if first {
		what = "the cluster's first certificate"
	}
	return fmt.Sprintf("%s waits for the seed's ACME budget (%d new orders a week; renewals do not count): expected at %s",
		what, q.PerWeek, q.At.UTC().Format(time.RFC3339))
}

// LeftOutMessage says which shards the certificate leaves out and why.
func LeftOutMessage(shards []string) string {
	const shown = 5
	list := strings.Join(shards[:min(len(shards), shown)], ", ")
	if len(shards) > shown {
		list += fmt.Sprintf(" and %d more", len(shards)-shown)
	}
	return fmt.Sprintf("a certificate holds at most %d names: shards %s are left out (their routes are served without a trusted certificate)", MaxNames, list)
}

// failure finds why issuance is failing, most specific first: a challenge, the order, the
// request, the Certificate's last issuance.
func (o Observed) failure() (reason, msg string, failed bool) {
	for _, ch := range o.Challenges {
		bad := ch.Status.State == acmev1.Errored || ch.Status.State == acmev1.Invalid
		// cert-manager keeps retrying a challenge it cannot present; the reason says why.
		if !bad && (ch.Status.Presented || ch.Status.Reason == "" || ch.Status.State == acmev1.Valid) {
			continue
		}
		why := fmt.Sprintf("DNS-01 challenge for %s: %s", ch.Spec.DNSName, ch.Status.Reason)
		if isRateLimit(ch.Status.Reason) {
			return v1alpha1.ReasonRateLimited, why, true
		}
		return v1alpha1.ReasonChallengeFailed, why, true
	}
	if ord := o.Order; ord != nil && (ord.Status.State == acmev1.Errored || ord.Status.State == acmev1.Invalid) {
		why := fmt.Sprintf("ACME order %s: %s", ord.Status.State, ord.Status.Reason)
		if isRateLimit(ord.Status.Reason) {
			return v1alpha1.ReasonRateLimited, why, true
		}
		return v1alpha1.ReasonIssuanceFailed, why, true
	}
	if r := o.Request; r != nil {
		for _, c := range r.Status.Conditions {
			if (c.Type == cmapi.CertificateRequestConditionReady && c.Status == cmmeta.ConditionFalse && c.Reason == cmapi.CertificateRequestReasonFailed) ||
				(c.Type == cmapi.CertificateRequestConditionDenied && c.Status == cmmeta.ConditionTrue) {
				if isRateLimit(c.Message) {
					return v1alpha1.ReasonRateLimited, "certificate request: " + c.Message, true
				}
				return v1alpha1.ReasonIssuanceFailed, "certificate request " + c.Reason + ": " + c.Message, true
			}
		}
	}
	if c := certCondition(o.Certificate, cmapi.CertificateConditionIssuing); c != nil && c.Status == cmmeta.ConditionFalse && c.Reason == "Failed" {
		return v1alpha1.ReasonIssuanceFailed, c.Message, true
	}
	return "", "", false
}

// progress says where a running issuance is.
func (o Observed) progress() string {
	if o.Order != nil && o.Order.Status.State != "" && o.Order.Status.State != acmev1.Valid {
		pending := 0
		for _, ch := range o.Challenges {
			if ch.Status.State != acmev1.Valid {
				pending++
			}
		}
		return fmt.Sprintf("; ACME order %s, %d of %d challenges pending", o.Order.Status.State, pending, len(o.Challenges))
	}
	if c := certCondition(o.Certificate, cmapi.CertificateConditionIssuing); c != nil && c.Status == cmmeta.ConditionTrue {
		return "; cert-manager is issuing: " + c.Message
	}
	return ""
}

// serving says what the routers keep serving while the condition is not True.
func (o Observed) serving() string {
	if kp := o.KeyPair; kp != nil && kp.ValidAt(o.Now) {
		return "; routers keep serving the certificate valid until " + kp.Leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	return ""
}

func certificateReady(c *cmapi.Certificate) bool {
	cc := certCondition(c, cmapi.CertificateConditionReady)
	return cc != nil && cc.Status == cmmeta.ConditionTrue
}

func certCondition(c *cmapi.Certificate, typ cmapi.CertificateConditionType) *cmapi.CertificateCondition {
	if c == nil {
		return nil
	}
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == typ {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// isRateLimit recognises the ACME rateLimited error (RFC 8555 section 6.7) in a message.
func isRateLimit(msg string) bool {
	return strings.Contains(msg, "urn:ietf:params:acme:error:rateLimited") || strings.Contains(strings.ToLower(msg), "rate limit")
}

func bound(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}

// Status is what status.certificate reports.
func Status(name string, names []string, kp *KeyPair, c *cmapi.Certificate) *v1alpha1.CertificateStatus {
	st := &v1alpha1.CertificateStatus{Name: name, DNSNames: names}
	if kp != nil {
		st.SerialNumber = kp.Serial()
		st.NotBefore = &metav1.Time{Time: kp.Leaf.NotBefore.UTC()}
		st.NotAfter = &metav1.Time{Time: kp.Leaf.NotAfter.UTC()}
	}
	if c != nil && c.Status.RenewalTime != nil {
		st.RenewalTime = c.Status.RenewalTime.DeepCopy()
	}
	return st
}
