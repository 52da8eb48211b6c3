// assistant-ui (@assistant-ui/react) with its own text part as shipped: MessagePartPrimitive.Text,
// whose `smooth` (on by default) is a typewriter — useSmooth's TextStreamAnimator reveals the
// arrived text a few characters per animation frame (≤ 5 ms a character, draining what is
// left within 250 ms), so each burst of arrivals is painted over the next frames, later than
// it arrived: render delay the record must report as such (tests/e2e/realui.spec.js holds it
// against the frames the page recorded, harness.js `shown`). Plain text in a
// `white-space: pre-line` paragraph, with the library's " ●" in-progress dot after it.
import { mountThread } from './assistant-thread.js';

mountThread({});
