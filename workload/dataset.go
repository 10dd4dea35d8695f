package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// Dataset formats.
const (
	FormatShareGPT = "sharegpt"
	FormatJSONL    = "jsonl"
)

// DatasetFormats are the dataset formats.
var DatasetFormats = []string{FormatShareGPT, FormatJSONL}

// MaxItemBytes bounds one ShareGPT conversation.
const MaxItemBytes = 16 << 20

// Message is one chat message of a dataset prompt.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Item is one prompt of a dataset.
type Item struct {
	Line     int // where the item starts in the file (1-based)
	Prompt   string
	Messages []Message
	// PromptTokens is the prompt's size by EstimateTokens.
	PromptTokens int
	// OutputTokens is the reply's size: the dataset's output_tokens, or
	// the ShareGPT reply's EstimateTokens; 0 when the item has none.
	OutputTokens int
}

// ReadDataset streams the items of a dataset file to fn, in file order.
// skipped counts ShareGPT conversations with no human turn followed by a
// reply (ShareGPT holds many; they are not errors), which fn never sees:
// the file holds the items fn saw plus skipped. fn's error stops it.
// The file must be a regular file of at most safefile.MaxDataBytes.
func ReadDataset(name, format string, fn func(Item) error) (skipped int, err error) {
	f, err := safefile.Open(name, safefile.Rules{What: "dataset"})
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return ScanDataset(name, f, format, fn)
}

// ScanDataset is ReadDataset over r, opened by the caller (see
// safefile.Open); name is the file in errors.
func ScanDataset(name string, r io.Reader, format string, fn func(Item) error) (skipped int, err error) {
	switch format {
	case FormatJSONL:
		return 0, readJSONL(name, r, fn)
	case FormatShareGPT:
		// JSON would turn each byte that is not UTF-8 into U+FFFD: the
		// reader fails there instead, and its error, which says where, is
		// the one returned.
		u := &utf8Reader{r: r}
		skipped, err := readShareGPT(name, u, fn)
		if u.err != nil {
			return skipped, fmt.Errorf("%s:%w", name, u.err)
		}
		return skipped, err
	}
	return 0, fmt.Errorf("unknown dataset format %q (one of %s)", format, strings.Join(DatasetFormats, ", "))
}

func readJSONL(name string, r io.Reader, fn func(Item) error) error {
	sc := bufio.NewScanner(skipBOM(r))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		if bad := InvalidUTF8(sc.Bytes()); bad != nil {
			return fmt.Errorf("%s:%d:%d: byte 0x%02x is %w (prompts are UTF-8 text)", name, line, bad.Col, bad.Byte, ErrNotUTF8)
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var raw struct {
			Prompt       *string         `json:"prompt"`
			Messages     []Message       `json:"messages"`
			OutputTokens json.RawMessage `json:"output_tokens"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("%s:%d: field %q: expected %s, got %s", name, line, te.Field, te.Type, te.Value)
			}
			return fmt.Errorf("%s:%d: not a JSON object: %v", name, line, err)
		}
		it := Item{Line: line}
		switch {
		case raw.Prompt != nil && raw.Messages != nil:
			return fmt.Errorf("%s:%d: give \"prompt\" or \"messages\", not both", name, line)
		case raw.Prompt != nil:
			if strings.TrimSpace(*raw.Prompt) == "" {
				return fmt.Errorf("%s:%d: field \"prompt\": empty", name, line)
			}
			it.Prompt = *raw.Prompt
			it.PromptTokens = EstimateTokens(it.Prompt)
		case len(raw.Messages) > 0:
			for i, m := range raw.Messages {
				if err := CheckRole(m.Role); err != nil {
					return fmt.Errorf("%s:%d: field \"messages[%d].role\": %w", name, line, i, err)
				}
				it.PromptTokens += EstimateTokens(m.Content)
			}
			it.Messages = raw.Messages
		default:
			return fmt.Errorf("%s:%d: each line needs \"prompt\" (a string) or \"messages\" (a list of {role, content})", name, line)
		}
		if len(raw.OutputTokens) > 0 && string(raw.OutputTokens) != "null" {
			var n int
			if err := json.Unmarshal(raw.OutputTokens, &n); err != nil || n < 1 {
				return fmt.Errorf("%s:%d: field \"output_tokens\": a whole number ≥ 1, got %s", name, line, safefile.Excerpt(string(raw.OutputTokens)))
			}
			it.OutputTokens = n
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: %w", name, line+1, errLineTooLong)
		}
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// lineTracker turns a decoder's byte offsets into line numbers, keeping
// only the bytes since the last offset asked about.
type lineTracker struct {
	r        io.Reader
	buf      []byte
	base     int64 // offset of buf[0]
	baseLine int   // line of buf[0]
	limit    int
}

func (l *lineTracker) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if len(l.buf)+n > l.limit {
		return 0, fmt.Errorf("an item is longer than %d bytes", l.limit)
	}
	l.buf = append(l.buf, p[:n]...)
	return n, err
}

// lineAt is the line of offset off; offsets must not decrease.
func (l *lineTracker) lineAt(off int64) int {
	k := int(off - l.base)
	k = min(max(k, 0), len(l.buf))
	l.baseLine += bytes.Count(l.buf[:k], []byte{'\n'})
	l.buf = append(l.buf[:0], l.buf[k:]...)
	l.base += int64(k)
	return l.baseLine
}

func readShareGPT(name string, r io.Reader, fn func(Item) error) (int, error) {
	lt := &lineTracker{r: skipBOM(r), baseLine: 1, limit: MaxItemBytes}
	dec := json.NewDecoder(lt)
	tok, err := dec.Token()
	if err == io.EOF {
		return 0, fmt.Errorf("%s: empty dataset", name)
	}
	if err != nil {
		return 0, fmt.Errorf("%s:%d: not ShareGPT JSON: %v", name, lt.lineAt(dec.InputOffset()), err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return 0, fmt.Errorf("%s:%d: not ShareGPT JSON: expected a list of conversations, got %s", name, lt.lineAt(dec.InputOffset()), safefile.Excerpt(fmt.Sprint(tok)))
	}
	skipped := 0
	for i := 0; dec.More(); i++ {
		// The offset before an element is the end of the token before it:
		// skip the whitespace and comma to the element's own line.
		line := lt.lineAt(dec.InputOffset())
		line += leadingNewlines(lt.buf)
		var conv struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := dec.Decode(&conv); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return skipped, fmt.Errorf("%s:%d: conversation %d: field %q: expected %s, got %s", name, line, i, te.Field, te.Type, te.Value)
			}
			return skipped, fmt.Errorf("%s:%d: conversation %d: %v", name, line, i, err)
		}
		if conv.Conversations == nil {
			return skipped, fmt.Errorf("%s:%d: conversation %d: field \"conversations\": missing (ShareGPT items are {\"conversations\": [{\"from\": \"human\", \"value\": ...}, ...]})", name, line, i)
		}
		// The prompt is the first human turn that a reply follows: a
		// human turn answered by another human turn is passed over.
		it := Item{Line: line}
		ok := false
		for j, t := range conv.Conversations {
			if (t.From == "human" || t.From == "user") && strings.TrimSpace(t.Value) != "" && j+1 < len(conv.Conversations) {
				reply := conv.Conversations[j+1]
				if reply.From != "gpt" && reply.From != "assistant" && reply.From != "chatgpt" {
					continue
				}
				it.Prompt = t.Value
				it.PromptTokens = EstimateTokens(t.Value)
				it.OutputTokens = max(1, EstimateTokens(reply.Value))
				ok = true
				break
			}
		}
		if !ok {
			skipped++
			continue
		}
		if err := fn(it); err != nil {
			return skipped, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return skipped, fmt.Errorf("%s:%d: not ShareGPT JSON: %v", name, lt.lineAt(dec.InputOffset()), err)
	}
	// The list is the whole file: what follows it would be dropped.
	dec.More() // reads up to what follows, so that the offset is its own
	at := dec.InputOffset()
	if tok, err := dec.Token(); err != io.EOF {
		line := lt.lineAt(at)
		what := "data"
		if err == nil {
			what = safefile.Excerpt(fmt.Sprint(tok))
		}
		return skipped, fmt.Errorf("%s:%d: not ShareGPT JSON: %s after the list of conversations (the file is one JSON list)", name, line, what)
	}
	return skipped, nil
}

// leadingNewlines counts the newlines in b's leading whitespace and commas.
func leadingNewlines(b []byte) int {
	n := 0
	for _, c := range b {
		switch c {
		case '\n':
			n++
		case ' ', '\t', '\r', ',':
		default:
			return n
		}
	}
	return n
}

// EstimateTokens counts text's tokens as the embedded simulator's tokenizer
// does, about one per four characters of English like BPE vocabularies:
// whitespace separates, every punctuation or symbol rune is one token, and
// runs of letters and digits are one token per four bytes.
func EstimateTokens(text string) int {
	n, run := 0, 0
	flush := func() {
		n += (run + 3) / 4
		run = 0
	}
	for _, r := range text {
		switch {
		case unicode.IsSpace(r):
			flush()
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			run += utf8.RuneLen(r)
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}
