package sim

import (
	"unicode"
	"unicode/utf8"
)

// The tokenizer is deliberately simple and fully deterministic: whitespace
// separates and is dropped, every punctuation or symbol rune is one token,
// and runs of letters, digits and '_' are cut into pieces of at most four
// bytes (never splitting a rune). That gives about one token per four
// characters of English, like real BPE vocabularies, and the same count in
// /tokenize, count_tokens and usage.prompt_tokens because they all call it.

const (
	// vocabSize mirrors a modern tokenizer's vocabulary size.
	vocabSize = 200_000
	// regularVocab ids are for text pieces; the ids above are special tokens.
	regularVocab = vocabSize - 16
	tokIMStart   = vocabSize - 2 // chat template: start of a message
	tokIMEnd     = vocabSize - 1 // chat template: end of a message
	maxPiece     = 4             // bytes per word piece
)

// pieceID maps a text piece to a token id (FNV-1a, folded into the vocabulary).
func pieceID(p string) int {
	h := uint32(2166136261)
	for i := 0; i < len(p); i++ {
		h ^= uint32(p[i])
		h *= 16777619
	}
	return int(h % regularVocab)
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isWordByte(byte(r))
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// appendTokens appends the token ids of text to dst and returns it.
func appendTokens(dst []int, text string) []int {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf { // ASCII fast path: most prompts
			switch {
			case c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
				i++
			case isWordByte(c):
				j := i + 1
				for j < len(text) && text[j] < utf8.RuneSelf && isWordByte(text[j]) {
					j++
				}
				if j < len(text) && text[j] >= utf8.RuneSelf {
					j = wordEnd(text, j) // a word continuing into non-ASCII letters
				}
				dst = appendWord(dst, text[i:j])
				i = j
			default:
				dst = append(dst, pieceID(text[i:i+1]))
				i++
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case isWordRune(r):
			j := wordEnd(text, i)
			dst = appendWord(dst, text[i:j])
			i = j
		default:
			dst = append(dst, pieceID(text[i:i+size]))
			i += size
		}
	}
	return dst
}

// wordEnd returns the end of the word run that continues at i.
func wordEnd(text string, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			break
		}
		i += size
	}
	return i
}

// appendWord cuts a word into pieces of at most maxPiece bytes.
func appendWord(dst []int, w string) []int {
	for len(w) > 0 {
		n := min(maxPiece, len(w))
		for n < len(w) && n > 0 && !utf8.RuneStart(w[n]) {
			n--
		}
		if n == 0 { // cannot happen for valid UTF-8 (runes are ≤4 bytes); be safe on invalid input
			n = min(maxPiece, len(w))
		}
		dst = append(dst, pieceID(w[:n]))
		w = w[n:]
	}
	return dst
}

// message is one chat message after content normalisation.
type message struct {
	Role string
	Text string
}

// chatTemplate applies the simulator's chat template, a ChatML lookalike:
//
//	<|im_start|> role content <|im_end|>   for each message
//	<|im_start|> assistant                 when addGenerationPrompt
//
// The markers are single special tokens; role names are tokenized as text.
func chatTemplate(dst []int, msgs []message, addGenerationPrompt bool) []int {
	for _, m := range msgs {
		dst = append(dst, tokIMStart)
		dst = appendTokens(dst, m.Role)
		dst = appendTokens(dst, m.Text)
		dst = append(dst, tokIMEnd)
	}
	if addGenerationPrompt {
		dst = append(dst, tokIMStart)
		dst = appendTokens(dst, "assistant")
	}
	return dst
}
