package sim

import (
	"net/http"
	"strconv"
	"sync"
)

// The tokenizer hashes pieces into ids, so text cannot be read back from
// ids directly. /detokenize instead gives, for every regular id, a piece
// that tokenizes to exactly that id: the simulator's own output word where
// the id is one (so a completion's ids read as its text), else the
// shortest word-character string that hashes to it. Pieces are joined so
// that tokenize(detokenize(ids)) == ids for every regular id, which is what
// a client that builds prompts from ids needs; whitespace is not recovered
// (the tokenizer drops it).

// wordBytes are the bytes a word piece is made of (see isWordByte).
const wordBytes = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

// detokTable maps regular ids to pieces, built on first use (tens of ms) so
// a Server that never detokenizes pays nothing.
type detokTable struct {
	once   sync.Once
	pieces [][maxPiece]byte // zero-padded: no piece holds a 0 byte
}

func (t *detokTable) build(out *outTable) {
	t.once.Do(func() {
		t.pieces = make([][maxPiece]byte, regularVocab)
		left := regularVocab
		set := func(id int, p []byte) {
			if t.pieces[id][0] == 0 {
				copy(t.pieces[id][:], p)
				left--
			}
		}
		// Punctuation and the output words first: they read back as themselves.
		for c := byte('!'); c <= '~'; c++ {
			if !isWordByte(c) {
				set(pieceID(string(c)), []byte{c})
			}
		}
		for _, w := range out.bare {
			set(w.id, []byte(w.text))
		}
		// Then every word string by length, so each id gets the shortest
		// piece naming it. FNV-1a is incremental: a prefix's hash extends
		// by one byte per step.
		buf := make([]byte, maxPiece)
		var walk func(depth, n int, h uint32)
		walk = func(depth, n int, h uint32) {
			for i := 0; i < len(wordBytes) && left > 0; i++ {
				buf[depth] = wordBytes[i]
				hc := (h ^ uint32(wordBytes[i])) * 16777619
				if depth+1 == n {
					set(int(hc%regularVocab), buf[:n])
				} else {
					walk(depth+1, n, hc)
				}
			}
		}
		for n := 1; n <= maxPiece && left > 0; n++ {
			walk(0, n, 2166136261)
		}
	})
}

// piece is the text of one id and whether it is a word piece; ok is false
// for ids outside the vocabulary.
func (t *detokTable) piece(id int) (text string, word, ok bool) {
	switch {
	case id < 0 || id >= vocabSize:
		return "", false, false
	case id == tokIMStart:
		return "<|im_start|>", false, true
	case id == tokIMEnd:
		return "<|im_end|>", false, true
	case id >= regularVocab:
		return "<|special_" + strconv.Itoa(id-regularVocab) + "|>", false, true
	}
	p := t.pieces[id]
	n := 0
	for n < maxPiece && p[n] != 0 {
		n++
	}
	if n == 0 { // no piece of up to maxPiece word bytes hashes here
		return "<|tok_" + strconv.Itoa(id) + "|>", false, true
	}
	return string(p[:n]), isWordByte(p[0]), true
}

// detokenize renders ids as text. A space goes before every word piece
// that follows something: two word pieces would otherwise merge into one,
// and after punctuation it reads like the output text.
func (s *Server) detokenize(ids []int) (string, *httpError) {
	s.detok.build(s.out)
	var b []byte
	for i, id := range ids {
		text, word, ok := s.detok.piece(id)
		if !ok {
			return "", badRequest("token %d is %d, outside the vocabulary [0, %d)", i, id, vocabSize)
		}
		if word && len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, text...)
	}
	return string(b), nil
}

// handleDetokenize is vLLM's POST /detokenize: {"tokens": [...]} → {"prompt": "..."}.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens *[]int `json:"tokens"`
	}
	if !s.decodeFor(w, r, &req, &req.Model) {
		return
	}
	if req.Tokens == nil {
		writeHTTPError(w, badRequest("tokens is required"))
		return
	}
	text, e := s.detokenize(*req.Tokens)
	if e != nil {
		writeHTTPError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}
