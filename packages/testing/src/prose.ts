/**
 * About `bytes` characters of repetitive prose in paragraphs (`\n\n`), for documents large
 * enough to load the splitter and the store (tests and benchmarks of big uploads).
 */
export function proseText(bytes: number): string {
  const words = ['invoice', 'travel', 'policy', 'laptop', 'meeting', 'budget', 'review', 'team'];
  const paragraphs: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const sentence = Array.from({ length: 60 }, (_, j) => words[(i * 7 + j * 3) % words.length]);
    const paragraph = `Paragraph ${i}: ${sentence.join(' ')}.`;
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return paragraphs.join('\n\n');
}
